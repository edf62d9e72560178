// Bulk import of a catalog export into the catalog topics (and commerce.orders.v1).
//
//   npm run catalog:import -- --store <id> --file export.jsonl [--resume | --restart] [--max-errors N]
//                             [--batch-size N] [--json]
//
// Input: JSON Lines (one object per line) or one JSON array of objects. Each object names its `type`
// (product, collection, article, page, inventory_level, price, b2b_catalog, order, metaobject) and is
// otherwise the platform object (Shopify REST shape, see schemas/catalog.ts; a metaobject's own type is
// `metaobject_type`); `"deleted": true` writes a tombstone.
//
// - Records go through the same normalization and the same writer as the webhooks (version guard,
//   idempotent producer, acks=all), so importing an old export after live webhooks never rolls a product
//   back, and importing the same file twice changes nothing.
// - Resumable: after every acknowledged batch the last committed line number is written to
//   `<file>.checkpoint` (atomically, with the store and a fingerprint of the file); `--resume` continues
//   after it. SIGINT/SIGTERM finish the batch in flight, write the checkpoint and exit 130.
// - A bad record is reported with its line number and field paths. `--max-errors N` (default 0): stop
//   at the (N+1)-th bad record, with the checkpoint just before it; below that, bad records are skipped.
// - Exit codes: 0 all imported; 2 finished with skipped bad records; 1 stopped (too many bad records, a
//   changed file, Kafka unavailable, …); 130 interrupted.
import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isStoreId, STORE_ID_MESSAGE } from '../../schemas/fields.ts';
import { runImport, importProgressDisplay } from './importer.ts';

async function main() {
  const { Command, InvalidArgumentError } = await import('commander');
  const intArg = (min: number) => (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer ≥ ${min}`);
    return n;
  };
  const program = new Command('catalog:import')
    .description('Import a catalog export (JSON Lines or a JSON array) into the catalog topics')
    .requiredOption('--store <id>', 'store id')
    .requiredOption('--file <path>', 'export file (.jsonl or .json)')
    .option('--resume', 'continue after the checkpoint of an interrupted import', false)
    .option('--restart', 'ignore an existing checkpoint and start from the first line', false)
    .option('--max-errors <n>', 'bad records to skip before stopping', intArg(0), 0)
    .option('--batch-size <n>', 'records per Kafka produce call', intArg(1), 500)
    .option('--json', 'print the summary as JSON', false)
    .parse();
  const o = program.opts<{
    store: string;
    file: string;
    resume: boolean;
    restart: boolean;
    maxErrors: number;
    batchSize: number;
    json: boolean;
  }>();
  if (o.resume && o.restart) program.error('--resume and --restart exclude each other');
  if (!isStoreId(o.store)) program.error(`--store: ${STORE_ID_MESSAGE}`);

  const { loadConfigOrExit } = await import('../common/config.ts');
  const { createKafka } = await import('../common/kafka/index.ts');
  const { createRedis } = await import('../common/redis.ts');
  const { createValueCodec } = await import('../common/kafka/codec.ts');
  const { CatalogWriter } = await import('./writer.ts');
  const { default: pino } = await import('pino');
  const cliProgress = await import('cli-progress');

  const config = loadConfigOrExit();
  const logger = pino(
    { level: config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL, base: { service: 'catalog-import' } },
    pino.destination(2),
  );
  const kafka = createKafka(config.kafkaBrokers, 'catalog-import', logger);
  const redis = createRedis(config.redisUrl, { connectionName: 'catalog-import' });
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
  const writer = new CatalogWriter({
    kafka,
    redis,
    codec: createValueCodec({ registryUrl: config.schemaRegistryUrl }),
    config,
    logger,
  });

  const controller = new AbortController();
  let signals = 0;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      signals++;
      if (signals > 1) process.exit(130);
      process.stderr.write('\ninterrupted: finishing the batch in flight and writing the checkpoint…\n');
      controller.abort();
    });
  }

  const tty = process.stderr.isTTY === true;
  // clearOnComplete: stopping the bar (before an error line) clears its line instead of leaving a copy
  const bar = tty
    ? new cliProgress.SingleBar(
        {
          format: 'importing [{bar}] {percentage}% | line {line} | {produced} records | {eta_formatted} left',
          stream: process.stderr,
          hideCursor: true,
          clearOnComplete: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  let display: ReturnType<typeof importProgressDisplay> | undefined;
  let lastLog = 0;
  let code = 0;
  try {
    await writer.start();
    const size = statSync(path.resolve(o.file)).size;
    display = bar ? importProgressDisplay(bar, process.stderr, size) : undefined;
    display?.start();
    const summary = await runImport({
      storeId: o.store,
      file: o.file,
      writer,
      resume: o.resume,
      restart: o.restart,
      maxErrors: o.maxErrors,
      batchSize: o.batchSize,
      signal: controller.signal,
      onProgress: (p) => {
        if (display) display.onProgress(p);
        else if (Date.now() - lastLog > 5_000) {
          lastLog = Date.now();
          process.stderr.write(
            `importing: line ${p.line}, ${p.produced} records, ${Math.round((100 * p.bytes) / Math.max(p.totalBytes, 1))}%\n`,
          );
        }
      },
      onError: (e) => {
        if (display) display.onError(e);
        else process.stderr.write(`line ${e.line}: ${e.message}\n`);
      },
    });
    display?.stop();
    if (o.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else {
      const lines = [
        `${summary.status}${summary.reason ? `: ${summary.reason}` : ''}`,
        `  lines up to ${summary.lastLine} committed${summary.resumedFrom ? ` (resumed after line ${summary.resumedFrom})` : ''}`,
        `  ${summary.produced} records written, ${summary.stale} skipped as older than what is stored, ${summary.errors.length} bad records`,
      ];
      if (summary.status !== 'completed') lines.push(`  checkpoint: ${summary.checkpoint} (continue with --resume)`);
      process.stdout.write(`${lines.join('\n')}\n`);
    }
    code = summary.status === 'interrupted' ? 130 : summary.status === 'stopped' ? 1 : summary.errors.length ? 2 : 0;
  } catch (err) {
    display?.stop();
    process.stderr.write(`catalog import failed: ${(err as Error).message}\n`);
    code = 1;
  } finally {
    await writer.close();
    redis.disconnect();
  }
  process.exit(code);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  void main();
}
