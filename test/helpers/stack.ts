import { inject } from 'vitest';

export interface StackInfo {
  dataDir: string;
  logPath: string;
  /** the environment the stack's processes run with */
  env: Record<string, string>;
  httpUrl: string;
  clickhouseUrl: string;
  kafkaBrokers: string[];
  redisUrl: string;
  schemaRegistryUrl: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackInfo;
  }
}

/** The shared stack started by test/global-setup.ts. */
export function stack(): StackInfo {
  return inject('stack');
}
