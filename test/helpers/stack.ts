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

/** Runs a read query on the stack's analysts' endpoint (`{name:Type}` parameters) and returns its rows. */
export async function sql<T = Record<string, unknown>>(
  query: string,
  params: Record<string, string | number> = {},
): Promise<T[]> {
  const qs = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [`param_${k}`, String(v)]));
  const r = await fetch(`${stack().clickhouseUrl}/?${qs}`, { method: 'POST', body: `${query} FORMAT JSONEachRow` });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`SQL ${r.status}: ${text}`);
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}
