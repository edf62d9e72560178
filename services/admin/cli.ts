// The admin CLI: store configuration as events. Every command writes records to `stores.config.v1`
// through the store-config writer (services/store-config/writer.ts) or reads the topic back.
//
//   npm run admin -- stores create --name "Acme"          # prints the store id and its token (once)
//   npm run admin -- sort-orders put <store> --code newest --nickname Newest --expr published_at:desc
//   npm run admin -- config export <store> --out acme.json
//   npm run admin -- --help                               # every command has --help
//
// Connection settings come from the environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, KAFKA_TOPIC_PREFIX, …;
// see services/common/config.ts); the defaults point at the local stack (`npm start`). Documented in
// docs/admin.md. Exit codes: 0 ok, 1 unexpected failure, 2 invalid input (the message names the flag or
// field), 3 not found, 78 invalid environment.
//
// This file wires the command groups (commands/*.ts) and maps errors to exit codes. The item kinds with
// put/list/get/delete are declared in kinds.ts; flag parsers, with bounds and choices read from the zod
// schemas of schemas/config.ts, in flags.ts; the writer, output and errors in io.ts.
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../common/config.ts';
import type { ConfigInputError } from '../store-config/writer.ts';
import { registerAutocomplete } from './commands/autocomplete.ts';
import { registerB2b } from './commands/b2b.ts';
import { registerConfig } from './commands/config.ts';
import { addItemCommands } from './commands/items.ts';
import { registerMediaPreloads } from './commands/media-preloads.ts';
import { registerPreviews } from './commands/previews.ts';
import { registerStores } from './commands/stores.ts';
import { registerTokens } from './commands/tokens.ts';
import { registerWebhookSecrets } from './commands/webhook-secrets.ts';
import { closeWriter, UsageError } from './io.ts';
import { KINDS } from './kinds.ts';

export function buildProgram(): Command {
  const program = new Command('admin')
    .description(
      'Store configuration for the storefront discovery platform (writes stores.config.v1). Connection: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, KAFKA_TOPIC_PREFIX.',
    )
    .option('--json', 'print machine-readable JSON')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  // the order of the groups is the order of the help
  registerStores(program);
  registerTokens(program);
  for (const spec of KINDS) addItemCommands(program, spec);
  registerPreviews(program);
  registerAutocomplete(program);
  registerB2b(program);
  registerWebhookSecrets(program);
  registerMediaPreloads(program);
  registerConfig(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    return report(err);
  } finally {
    await closeWriter();
  }
}

function report(err: unknown): number {
  if (err instanceof CommanderError) {
    // commander already printed its message (or the help)
    return err.exitCode === 0 ? 0 : 2;
  }
  if ((err as Error)?.name === 'ConfigInputError') {
    for (const i of (err as ConfigInputError).issues) process.stderr.write(`error: ${i.path}: ${i.message}\n`);
    return 2;
  }
  if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n`);
    return 2;
  }
  if ((err as Error)?.name === 'NotFoundError') {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 3;
  }
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    return 78;
  }
  const e = err as Error & { name?: string };
  if (e?.name === 'RegistryError') {
    process.stderr.write(
      `error: schema registry: ${e.message} (SCHEMA_REGISTRY_URL: ${process.env.SCHEMA_REGISTRY_URL || 'the local stack'})\n`,
    );
    return 1;
  }
  if (e?.name?.startsWith('KafkaJS')) {
    process.stderr.write(
      `error: Kafka: ${e.message} (brokers: ${process.env.KAFKA_BROKERS || 'the local stack, KAFKA_BROKERS unset'})\n`,
    );
    return 1;
  }
  process.stderr.write(`error: ${e?.stack ?? String(err)}\n`);
  return 1;
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  process.exit(code);
}
