// What every admin command shares: the lazily opened store-config writer, output (human or --json), the
// errors main() turns into exit codes, and small helpers for JSON input.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { loadConfig } from '../common/config.ts';
import type { ConfigWriter } from '../store-config/writer.ts';

/** invalid input that commander cannot see (exit 2) */
export class UsageError extends Error {}

/** the store or item does not exist (exit 3; the writer throws an error of the same name) */
export class NotFoundError extends Error {
  override name = 'NotFoundError';
}

interface Globals {
  json?: boolean;
}

let writerInstance: ConfigWriter | undefined;
/** the writer (Kafka, registry, Avro) is loaded only when a command runs, so help and flag errors are fast */
export async function writer(): Promise<ConfigWriter> {
  if (!writerInstance) {
    const config = loadConfig();
    const { openConfigWriter, writerOptionsFromConfig } = await import('../store-config/writer.ts');
    const pino = (await import('pino')).default;
    // logs go to stderr so that stdout carries only the command's output
    const logger = pino({ level: process.env.LOG_LEVEL ?? 'error', base: { service: 'admin' } }, pino.destination(2));
    writerInstance = openConfigWriter({ ...writerOptionsFromConfig(config, logger), clientId: 'admin-cli' });
  }
  return writerInstance;
}

/** closes the writer if a command opened one */
export async function closeWriter(): Promise<void> {
  await writerInstance?.close().catch(() => undefined);
}

/** prints `human`, or `data` as JSON with the global --json */
export function out(cmd: Command, human: string, data: unknown): void {
  const g = cmd.optsWithGlobals() as Globals;
  process.stdout.write(g.json ? `${JSON.stringify(data, null, 2)}\n` : `${human}\n`);
}

export function readJsonFile(file: string, flag: string): unknown {
  let text: string;
  try {
    text = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${flag}: ${file} is not valid JSON (${(err as Error).message})`);
  }
}

/** drop undefined values so that only given flags override */
export function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

export function asObject(v: unknown, flag: string): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new UsageError(`${flag}: expected a JSON object`);
  return v as Record<string, unknown>;
}

export function mergeDeep(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const outObj: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    const b = outObj[k];
    outObj[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? mergeDeep(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return outObj;
}
