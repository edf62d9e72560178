// `npm run replay -- --processor <name> --from <earliest|ISO time|p:o,…> [--no-swap] [--allow-partial-swap]`
//
// Single-node mode (no CLICKHOUSE_URL): chDB belongs to the app process, so the CLI asks the app to run
// the replay (POST /internal/replay, bearer token from STREAMS_REPLAY_TOKEN or DATA_DIR/replay.token) and
// renders the streamed progress. Distributed mode (CLICKHOUSE_URL set): the CLI runs the replay itself
// against ClickHouse, Kafka and Redis; the processor's own deployment must be stopped first (the CLI
// refuses while its consumer group has members).
import { readFileSync } from 'node:fs';
import cliProgress from 'cli-progress';
import { Command } from 'commander';
import { dbOptionsFromConfig, openDb } from '../../clickhouse/client.ts';
import { TOPICS, type TopicKey } from '../../schemas/topics.ts';
import { loadConfigOrExit, topicName } from '../../services/common/config.ts';
import { createKafka, createProducerClient } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { PROCESSORS, processorByName } from '../registry.ts';
import { registryDecoder } from '../runtime/decoder.ts';
import type { RuntimeDeps } from '../runtime/types.ts';
import { streamsClientFactory } from '../service.ts';
import { parseFrom, replayTokenPath } from './http.ts';
import { type ReplayEvent, ReplayError, runReplay } from './replay.ts';

const program = new Command()
  .name('replay')
  .description(
    'Rebuild a processor’s ClickHouse tables from the Kafka log into shadow tables, compare, and swap them in atomically',
  )
  .requiredOption('--processor <name>', `processor to replay: ${Object.keys(PROCESSORS).join(', ')}`)
  .requiredOption('--from <start>', "'earliest', an ISO 8601 time, or partition offsets like 0:120,1:98")
  .option('--no-swap', 'compare only; keep the shadow tables for inspection')
  .option('--swap', 'swap after comparing (default for --from earliest)')
  .option(
    '--allow-partial-swap',
    'allow swapping the result of a replay from a time or offsets (it holds only part of the history)',
  )
  .option('--url <url>', 'the app to run the replay in (single-node mode); default http://HOST:HTTP_PORT')
  .parse();
const args = program.opts<{
  processor: string;
  from: string;
  swap?: boolean;
  allowPartialSwap?: boolean;
  url?: string;
}>();
const swapGiven = process.argv.includes('--swap') || process.argv.includes('--no-swap');

const config = loadConfigOrExit();
let from: ReturnType<typeof parseFrom>;
try {
  from = parseFrom(args.from);
} catch (err) {
  process.stderr.write(`--from: ${(err as Error).message}\n`);
  process.exit(64);
}
const processor = processorByName(args.processor);
if (!processor) {
  process.stderr.write(
    `--processor: unknown processor ${JSON.stringify(args.processor)}; known: ${Object.keys(PROCESSORS).join(', ')}\n`,
  );
  process.exit(64);
}

const bar = new cliProgress.SingleBar(
  {
    format: ' {phase} |{bar}| {percentage}% | {value}/{total} messages | {rate} msg/s',
    hideCursor: true,
    clearOnComplete: false,
  },
  cliProgress.Presets.shades_classic,
);
let barStarted = false;
let failed = false;
const diffs: string[] = [];
let phase = 'prepare';

function onEvent(e: ReplayEvent) {
  switch (e.type) {
    case 'phase':
      phase = e.phase;
      if (barStarted) bar.update({ phase });
      else process.stdout.write(`${e.message}\n`);
      break;
    case 'progress':
      if (!barStarted) {
        bar.start(Math.max(e.total, 1), e.done, { phase, rate: e.eventsPerSecond });
        barStarted = true;
      }
      bar.setTotal(Math.max(e.total, 1));
      bar.update(e.done, { phase, rate: e.eventsPerSecond });
      break;
    case 'diff':
      diffs.push(
        `  ${e.diff.table}  store=${e.diff.store_id}  day=${e.diff.day}  live=${e.diff.live}  shadow=${e.diff.shadow}`,
      );
      break;
    case 'result': {
      if (barStarted) bar.stop();
      barStarted = false;
      const r = e.result;
      process.stdout.write(
        `\nreplayed ${r.messages} messages of ${r.processor} in ${r.seconds}s (${r.eventsPerSecond} msg/s) into ${r.tables.length} tables\n`,
      );
      if (diffs.length)
        process.stdout.write(`differences between live and rebuilt tables (store, day):\n${diffs.join('\n')}\n`);
      else process.stdout.write('live and rebuilt tables agree on every store and day\n');
      process.stdout.write(
        r.swapped
          ? 'swapped: the rebuilt tables are live; the previous ones are kept as <table>__shadow\n'
          : 'not swapped: the rebuilt tables are <table>__shadow\n',
      );
      break;
    }
    case 'error':
      if (barStarted) bar.stop();
      barStarted = false;
      failed = true;
      process.stderr.write(`replay failed: ${e.message}\n`);
      break;
  }
}

const request = {
  processor: args.processor,
  from,
  swap: swapGiven ? args.swap : undefined,
  allowPartialSwap: args.allowPartialSwap,
};

if (config.embedded.clickhouse) {
  // single node: the app owns chDB, so the app runs the replay
  const url = args.url ?? `http://${config.HOST}:${config.HTTP_PORT}`;
  let token = config.STREAMS_REPLAY_TOKEN;
  if (!token) {
    try {
      token = readFileSync(replayTokenPath(config), 'utf8').trim();
    } catch {
      process.stderr.write(
        `no replay token: set STREAMS_REPLAY_TOKEN or start the app once (it writes ${replayTokenPath(config)})\n`,
      );
      process.exit(78);
    }
  }
  let res: Response;
  try {
    res = await fetch(`${url}/internal/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        processor: args.processor,
        from: args.from,
        swap: request.swap,
        allowPartialSwap: request.allowPartialSwap,
      }),
    });
  } catch (err) {
    process.stderr.write(`cannot reach the app at ${url}: ${(err as Error).message} (is \`npm start\` running?)\n`);
    process.exit(69);
  }
  if (res.status !== 200 || !res.body) {
    process.stderr.write(`the app refused the replay (${res.status}): ${await res.text()}\n`);
    process.exit(res.status === 401 ? 77 : 65);
  }
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let i = buf.indexOf('\n');
    while (i >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) onEvent(JSON.parse(line) as ReplayEvent);
      i = buf.indexOf('\n');
    }
  }
} else {
  // distributed: run it here against CLICKHOUSE_URL
  const logger = createLogger('replay', config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL);
  const db = await openDb(dbOptionsFromConfig(config));
  const redis = createRedis(config.redisUrl, { connectionName: 'replay-cli' });
  const kafka = createKafka(config.kafkaBrokers, 'replay-cli', logger);
  const producer = createProducerClient(kafka);
  const key = processor.topic as TopicKey;
  const deps: RuntimeDeps = {
    db,
    redis,
    logger,
    decoder: registryDecoder(config.schemaRegistryUrl, [{ key, name: topicName(config, TOPICS[key].name) }]),
    topicName: (k) => topicName(config, TOPICS[k].name),
    createClient: streamsClientFactory(kafka, logger),
    dlq: {
      send: (records) => producer.send(records),
    },
  };
  try {
    await runReplay(
      {
        config,
        db,
        redis,
        kafka,
        logger,
        deps,
        runOptions: () => ({
          lingerMs: config.STREAMS_LINGER_MS,
          maxBatchMessages: config.STREAMS_MAX_BATCH_MESSAGES,
          maxBatchBytes: config.STREAMS_MAX_BATCH_BYTES,
          dedupHorizonHours: config.STREAMS_DEDUP_HORIZON_HOURS,
          sessionTimeoutMs: config.STREAMS_SESSION_TIMEOUT_MS,
        }),
      },
      request,
      onEvent,
    );
  } catch (err) {
    onEvent({ type: 'error', message: err instanceof ReplayError ? err.message : String((err as Error).stack ?? err) });
  } finally {
    await producer.close();
    redis.disconnect();
    await db.close();
  }
}
process.exit(failed ? 1 : 0);
