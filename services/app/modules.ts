// The modules the single-node app process hosts, in start order. Each issue's service adds itself here.
import { beaconModule } from '../beacon/module.ts';
import { catalogModule } from '../catalog/module.ts';
import { demoModule } from '../demo/module.ts';
import { schemaRegistryModule } from '../schema-registry/module.ts';
import { shopModule } from '../shop/module.ts';
import { siteModule } from '../site/module.ts';
import { storeConfigModule } from '../store-config/module.ts';
import { storefrontModule } from '../storefront/module.ts';
import { streamsModule } from '../../streams/module.ts';
import type { AppModule } from './context.ts';

export const modules: AppModule[] = [
  schemaRegistryModule,
  storeConfigModule,
  beaconModule,
  streamsModule,
  storefrontModule,
  siteModule,
  catalogModule,
  demoModule,
  shopModule,
];
