// The modules the single-node app process hosts, in start order. Each issue's service adds itself here.
import type { AppModule } from './context.ts';

export const modules: AppModule[] = [];
