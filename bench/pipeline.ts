// Pipeline benchmark: `node bench/pipeline.ts [--events N]`
//
// Against the real embedded broker, schema registry, redis-server and an in-process chDB directory:
//   1. sustained throughput: a generated backlog of engagement events and search requests consumed by
//      the processors into every aggregate (events/s), next to a baseline measured in the same run: the
//      same raw rows inserted straight into events_raw (no decoding, dedup, sessions or pairs);
//   2. freshness: produce-ack → visible, p50/p95, for a trending query (the agg:trending notification
//      the read API applies) and for a co-view pair (queryable in co_view_pairs);
//   3. replay speed of the events processor (events/s) into shadow tables, including compare and swap.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newUlid } from '../services/common/ids.ts';
import { openDb } from '../clickhouse/client.ts';
import { migrate } from '../clickhouse/migrate.ts';
import { loadConfig } from '../services/common/config.ts';
import { createKafka } from '../services/common/kafka/index.ts';
import { createLogger } from '../services/common/logger.ts';
import { createRedis } from '../services/common/redis.ts';
import { selectProcessors } from '../streams/registry.ts';
import { runReplay } from '../streams/replay/replay.ts';
import { startStreams } from '../streams/service.ts';
import { parseTrendingMessage, TRENDING_CHANNEL } from '../schemas/channels.ts';
import { enrichedEvent, produce, searchRequest, startInfra, waitCaughtUp } from '../test/streams/helpers.ts';
import { generateScenario } from '../test/streams/scenario.ts';
import { rawRow } from '../streams/events/processor.ts';
import { recordFigures } from './out.ts';
import { chdbByRole, cpuByKind, readThreadCpu } from './threads.ts';

const argIdx = process.argv.indexOf('--events');
const target = argIdx > 0 ? Number(process.argv[argIdx + 1]) : 30_000;
/** CPU seconds of this process (JS, chDB's threads, the in-process broker and registry) since `from` */
const cpuSeconds = (from: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1e6;
};
/** CPU seconds by thread kind → µs per message */
const perMessage = (t: Record<string, number>, count: number) =>
  Object.fromEntries(Object.entries(t).map(([k, v]) => [k, (v * 1e6) / Math.max(1, count)])) as Record<
    'js' | 'v8' | 'chdb' | 'libuv' | 'other',
    number
  >;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

const infra = await startInfra();
const chdir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-chdb-'));
const db = await openDb({ chdbPath: chdir, database: 'bench' });
await migrate(db);
const logger = createLogger('bench', 'warn');
const config = loadConfig({
  KAFKA_BROKERS: infra.brokers.join(','),
  REDIS_URL: infra.redisUrl,
  SCHEMA_REGISTRY_URL: infra.registryUrl,
  KAFKA_TOPIC_PREFIX: infra.prefix,
  DATA_DIR: infra.dir,
  LOG_LEVEL: 'warn',
  STREAMS_SESSION_TIMEOUT_MS: '6000',
  // chunk-size experiments: `STREAMS_MAX_BATCH_MESSAGES=… STREAMS_MAX_BATCH_BYTES=… node bench/pipeline.ts`
  ...Object.fromEntries(
    ['STREAMS_MAX_BATCH_MESSAGES', 'STREAMS_MAX_BATCH_BYTES', 'STREAMS_LINGER_MS'].flatMap((k) =>
      process.env[k] ? [[k, process.env[k] as string]] : [],
    ),
  ),
});
const redis = createRedis(infra.redisUrl);
const kafka = createKafka(infra.brokers, 'bench', logger);

try {
  // ---- backlog
  const stores = ['bench_a', 'bench_b', 'bench_c', 'bench_d'];
  const perVisit = 10;
  const sc = generateScenario({
    seed: 1,
    stores,
    visitsPerStore: Math.ceil(target / perVisit / stores.length),
    ordersPerStore: 50,
  });
  await produce(infra, 'events', sc.events);
  await produce(infra, 'requests', sc.requests);
  const n = sc.events.length + sc.requests.length;

  // ---- baseline: the same raw rows, inserted straight into events_raw in 10k blocks
  const rows = sc.events.map((e, i) => ({
    store_id: e.value.store_id,
    ts: e.value.timestamp.replace('T', ' ').replace('Z', ''),
    event_id: `${e.value.event_id}-${i}`,
    event_type: e.value.event_type,
    session_id: e.value.session_id,
    product_id: e.value.product_id,
    query: e.value.query ?? '',
    device_type: e.value.device_type,
    received_at: e.value.received_at.replace('T', ' ').replace('Z', ''),
    _partition: 0,
    _offset: i,
  }));
  await db.command('CREATE TABLE IF NOT EXISTS baseline_raw AS events_raw');
  const bt0 = readThreadCpu();
  const bc0 = process.cpuUsage();
  const b0 = performance.now();
  for (let i = 0; i < rows.length; i += 10_000) await db.insert('baseline_raw', rows.slice(i, i + 10_000));
  const baselineRate = rows.length / ((performance.now() - b0) / 1000);
  const baselineCpu = cpuSeconds(bc0);
  const bt1 = readThreadCpu();
  const baselineThreads = cpuByKind(bt0, bt1);
  const baselineRoles = chdbByRole(bt0, bt1);
  await db.command('TRUNCATE TABLE baseline_raw');
  // the same events as the processor's own rows: every column of events_raw, as the pipeline writes them
  const fullRows = sc.events.map((e, i) =>
    rawRow({ value: e.value, position: { topic: 'events', partition: 0, offset: BigInt(i) }, brokerTime: 0 }),
  );
  const ft0 = readThreadCpu();
  const f0 = performance.now();
  for (let i = 0; i < fullRows.length; i += 10_000) await db.insert('baseline_raw', fullRows.slice(i, i + 10_000));
  const fullRate = fullRows.length / ((performance.now() - f0) / 1000);
  const ft1 = readThreadCpu();
  const fullThreads = cpuByKind(ft0, ft1);
  const fullRoles = chdbByRole(ft0, ft1);
  await db.command('DROP TABLE baseline_raw SYNC');

  // ---- throughput: start the processors over the backlog and wait for catch-up
  const t0Threads = readThreadCpu();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const streams = await startStreams({
    config,
    db,
    redis,
    kafka,
    logger,
    processors: selectProcessors('events,requests'),
  });
  const groups = (['events', 'requests'] as const).map((k) => ({ group: `streams.${k}`, topic: infra.topic(k) }));
  await waitCaughtUp(infra.kafka, groups, 600_000);
  const seconds = (performance.now() - t0) / 1000;
  const rate = n / seconds;
  const cpu = cpuSeconds(c0);
  const t1Threads = readThreadCpu();
  const threads = cpuByKind(t0Threads, t1Threads);
  const roles = chdbByRole(t0Threads, t1Threads);
  const stageLines: string[] = [];
  for (const [name, runner] of streams.runners) {
    const st = runner.stats;
    const per = (ms: number) => ((ms * 1000) / Math.max(1, st.messages)).toFixed(1);
    const total = [...st.ms.values()].reduce((a, b) => a + b, 0);
    stageLines.push(
      `  ${name}: ${st.messages} messages in ${st.chunks} chunks (avg ${(st.messages / Math.max(1, st.chunks)).toFixed(0)}/chunk, fetched batches avg ${(st.fetched / Math.max(1, st.chunks)).toFixed(0)}); µs/message summed over partitions: total ${per(total)}`,
      `    ${[...st.ms].map(([k, v]) => `${k} ${per(v)}`).join(', ')}`,
      `    rows per message: ${[...st.rows].map(([k, v]) => `${k} ${(v / Math.max(1, st.messages)).toFixed(2)}`).join(', ')}`,
    );
  }

  // ---- freshness
  const sub = createRedis(infra.redisUrl);
  const seen = new Map<string, number>();
  await sub.subscribe(TRENDING_CHANNEL);
  sub.on('message', (_c, m) => {
    for (const d of parseTrendingMessage(m)) if (!seen.has(d.query)) seen.set(d.query, performance.now());
  });
  const trendingMs: number[] = [];
  const coViewMs: number[] = [];
  for (let i = 0; i < 40; i++) {
    const store = 'fresh';
    const q = `fresh query ${i} ${newUlid().toLowerCase()}`;
    const session = `fresh-${i}`;
    const now = new Date().toISOString();
    const a = String(900_000 + i * 2);
    const views = [a, String(900_001 + i * 2)].map((p) =>
      enrichedEvent({
        event_type: 'product_view',
        store_id: store,
        session_id: session,
        timestamp: now,
        product_id: p,
      }),
    );
    await Promise.all([
      produce(infra, 'requests', [
        {
          key: `${store}:${session}`,
          value: searchRequest({ store_id: store, query: q, session_id: session, country: 'US', at: now }),
        },
      ]),
      produce(
        infra,
        'events',
        views.map((v) => ({ key: `${store}:${session}`, value: v })),
      ),
    ]);
    const acked = performance.now();
    const deadline = acked + 10_000;
    let coView: number | undefined;
    while ((coView === undefined || !seen.has(q)) && performance.now() < deadline) {
      if (coView === undefined) {
        const r = await db.query<{ n: string }>(
          "SELECT count() AS n FROM co_view_pairs WHERE store_id = 'fresh' AND product_a = {a:UInt64}",
          { a: BigInt(a) },
        );
        if (Number(r[0].n) > 0) coView = performance.now();
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    if (seen.has(q)) trendingMs.push((seen.get(q) as number) - acked);
    if (coView !== undefined) coViewMs.push(coView - acked);
    await new Promise((r) => setTimeout(r, 100));
  }
  sub.disconnect();

  // ---- a trickle: what the processors cost at a low, steady rate (engagement events over many sessions)
  const TRICKLE_RATE = 50;
  const TRICKLE_SECONDS = 15;
  const eventsRunner = streams.runners.get('events');
  const chunks0 = eventsRunner?.stats.chunks ?? 0;
  const tc0 = process.cpuUsage();
  const tth0 = readThreadCpu();
  const tt0 = performance.now();
  let trickled = 0;
  while (performance.now() - tt0 < TRICKLE_SECONDS * 1000) {
    const due = Math.floor(((performance.now() - tt0) / 1000) * TRICKLE_RATE);
    const batch: { key: string; value: ReturnType<typeof enrichedEvent> }[] = [];
    for (; trickled < due; trickled++) {
      const session = `trickle-${trickled % 500}`;
      batch.push({
        key: `trickle:${session}`,
        value: enrichedEvent({
          event_type: 'product_view',
          store_id: 'trickle',
          session_id: session,
          timestamp: new Date().toISOString(),
          product_id: String(1 + (trickled % 97)),
        }),
      });
    }
    if (batch.length) await produce(infra, 'events', batch);
    await new Promise((r) => setTimeout(r, 20));
  }
  await waitCaughtUp(infra.kafka, groups, 60_000);
  const trickleSeconds = (performance.now() - tt0) / 1000;
  const trickleCores = cpuSeconds(tc0) / trickleSeconds;
  const tth1 = readThreadCpu();
  const trickleThreads = cpuByKind(tth0, tth1);
  const trickleRoles = chdbByRole(tth0, tth1);
  /** a share of the trickle's wall time, as % of a core */
  const core = (seconds: number) => `${((seconds / trickleSeconds) * 100).toFixed(0)} %`;
  const trickleChunks = (eventsRunner?.stats.chunks ?? 0) - chunks0;

  // ---- replay speed
  const rc0 = process.cpuUsage();
  const replay = await runReplay(
    { config, db, redis, kafka, logger, streams, deps: streams.deps, runOptions: streams.runOptions },
    { processor: 'events', from: { kind: 'earliest' } },
    () => {},
  );
  const replayCpu = cpuSeconds(rc0);
  await streams.stop();

  // issue #21's goals: pipeline and replay ≥ 0.5× the bare insert of the same raw rows
  recordFigures('pipeline', {
    events_per_second: rate,
    bare_insert_rows_per_second: baselineRate,
    ratio_to_bare_insert: rate / baselineRate,
    full_row_insert_rows_per_second: fullRate,
    // CPU µs per event of the sustained phase by thread kind (bench/threads.ts), and the bare inserts' per row
    cpu_us_per_event: perMessage(threads, n),
    // of its chdb share: the insert pipelines' threads and the merges'
    chdb_cpu_us_per_event: { pipelines: (roles.pipelines * 1e6) / n, merges: (roles.merges * 1e6) / n },
    bare_insert_cpu_us_per_row: perMessage(baselineThreads, rows.length),
    full_row_insert_cpu_us_per_row: perMessage(fullThreads, fullRows.length),
    freshness_co_view_p95_ms: pct(coViewMs, 95),
    freshness_trending_p95_ms: pct(trendingMs, 95),
    trickle_events_per_second: TRICKLE_RATE,
    trickle_cpu_cores: trickleCores,
    trickle_events_chunks_per_second: trickleChunks / trickleSeconds,
  });
  recordFigures('replay', {
    events_per_second: replay.eventsPerSecond,
    ratio_to_bare_insert: replay.eventsPerSecond / baselineRate,
  });
  const f = (x: number) => Math.round(x).toLocaleString('en-US');
  const split = (t: typeof threads, r: typeof roles, count: number) => {
    const us = perMessage(t, count);
    const [pipelines, merges] = [r.pipelines, r.merges].map((v) => ((v * 1e6) / Math.max(1, count)).toFixed(1));
    return `JS ${us.js.toFixed(1)}, V8 helpers ${us.v8.toFixed(1)}, chDB ${(us.chdb + us.libuv).toFixed(1)} (its pools and merges ${us.chdb.toFixed(1)}: pipelines ${pipelines}, merges ${merges}; statements on libuv's threads ${us.libuv.toFixed(1)}), other ${us.other.toFixed(1)}`;
  };
  process.stdout.write(
    [
      'pipeline benchmark (embedded broker, chDB in process, redis-server; one process)',
      `  backlog: ${f(sc.events.length)} engagement events + ${f(sc.requests.length)} request events, ${stores.length} stores`,
      `  sustained throughput into all aggregates: ${f(rate)} events/s (${seconds.toFixed(1)} s, incl. group join; ${f(n / cpu)} events per CPU-second of this process)`,
      `    CPU µs per event by thread (the broker and registry run on this process's JS thread): ${split(threads, roles, n)}`,
      ...stageLines,
      `  baseline, raw rows straight into events_raw: ${f(baselineRate)} rows/s (${f(rows.length / baselineCpu)} per CPU-second) → pipeline/baseline = ${(rate / baselineRate).toFixed(2)}`,
      `    CPU µs per row: ${split(baselineThreads, baselineRoles, rows.length)}`,
      `  the same events as the processor's full rows (every column of events_raw) straight in: ${f(fullRate)} rows/s; CPU µs per row: ${split(fullThreads, fullRoles, fullRows.length)}`,
      `  freshness, produce ack → agg:trending notification: p50 ${pct(trendingMs, 50)?.toFixed(0)} ms, p95 ${pct(trendingMs, 95)?.toFixed(0)} ms (n=${trendingMs.length})`,
      `  freshness, produce ack → co_view_pairs queryable:   p50 ${pct(coViewMs, 50)?.toFixed(0)} ms, p95 ${pct(coViewMs, 95)?.toFixed(0)} ms (n=${coViewMs.length})`,
      `  a trickle of ${TRICKLE_RATE} engagement events/s for ${TRICKLE_SECONDS} s: ${(trickleCores * 100).toFixed(0)} % of a core (this process), the events processor in ${(trickleChunks / trickleSeconds).toFixed(1)} chunks/s (${(trickled / Math.max(1, trickleChunks)).toFixed(1)} events each; a chunk's inserts cost about the same however few its rows)`,
      `    by thread: JS ${core(trickleThreads.js)}, V8 helpers ${core(trickleThreads.v8)}, chDB's pipelines ${core(trickleRoles.pipelines)}, merges ${core(trickleRoles.merges)}, its other pools ${core(trickleThreads.chdb - trickleRoles.pipelines - trickleRoles.merges)}, statements on libuv's threads ${core(trickleThreads.libuv)}`,
      `  replay of the events processor: ${f(replay.eventsPerSecond)} events/s (${f(replay.messages)} messages in ${replay.seconds.toFixed(1)} s incl. shadow DDL and cut-over; ${replay.differences} differences; ${f(replay.messages / replayCpu)} events per CPU-second incl. compare and swap)`,
      `    phases: shadow DDL ${replay.phaseSeconds.prepare.toFixed(2)} s, consume ${replay.phaseSeconds.consume.toFixed(2)} s (${f(replay.messages / Math.max(0.001, replay.phaseSeconds.consume))} events/s), compare ${replay.phaseSeconds.compare.toFixed(2)} s, swap ${replay.phaseSeconds.swap.toFixed(2)} s; ${replay.chunks.count} chunks (avg ${f(replay.chunks.messages / Math.max(1, replay.chunks.count))}), first chunk ${replay.chunks.firstChunkAfterSeconds.toFixed(2)} s after the consumer started, last committed at ${replay.chunks.lastChunkAfterSeconds.toFixed(2)} s`,
      `    µs/message summed over partitions: ${Object.entries(replay.chunks.stageMs)
        .map(([k, v]) => `${k} ${((v * 1000) / Math.max(1, replay.chunks.messages)).toFixed(1)}`)
        .join(', ')}`,
      '',
    ].join('\n'),
  );
} finally {
  redis.disconnect();
  await db.close();
  await infra.stop();
  rmSync(chdir, { recursive: true, force: true });
}
process.exit(0);
