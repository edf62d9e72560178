// Replay: rebuild a processor's tables from the log into shadow tables, compare, swap atomically.
//
//   1. shadow tables `<table>__shadow` are created with the live DDL (`CREATE TABLE … AS …`), and the
//      processor's materialized views are re-created over them from their own `SHOW CREATE` text with the
//      table names rewritten (never POPULATE: views only ever see inserts);
//   2. a dedicated consumer group (`streams.replay.<processor>.<run id>`) is set to the start (earliest,
//      a time, or explicit offsets) and consumes up to the high watermarks seen at the start, through the
//      same runtime as live processing (same dedup claims, own state namespace, no notifications);
//   3. cut-over: the live runner of the processor is stopped (in this process) or must be stopped
//      (distributed mode: the group must have no members); the replay continues to the live group's
//      committed offsets, so shadow and live have read exactly the same messages;
//   4. live and shadow are compared per store and day (row counts / summed measures; versioned tables
//      such as the catalog's are read with FINAL, so the latest state is compared) and differences
//      are reported;
//   5. swap: `EXCHANGE TABLES t AND t__shadow` for each table (atomic per table: a reader sees the old or
//      the new table, never a missing one), the live group's offsets move to where the replay stopped,
//      the live state namespace switches to the replay's, the live runner starts again. Plain views
//      over a swapped table (e.g. catalog_products_current) name it and so read the new one at once.
//      Materialized views are bound to their source and target: whether that binding follows the name
//      or the table's UUID through an EXCHANGE differs between ClickHouse versions (chDB 26.7 follows
//      the name), so after the swap the live views are re-created from their pre-swap DDL, which names
//      the live tables (`CREATE OR REPLACE`, atomic: the view is never missing), while nothing writes.
// Tombstones reach the replayed processor exactly as they reach the live one (`parseTombstone`), so a
// processor of a compacted topic (the catalog projections) rebuilds its deletes too.
// On a ClickHouse cluster (CLICKHOUSE_CLUSTER) a replay refuses before anything starts (ReplayError 501,
// clickhouse/cluster-ddl.ts REPLAY_ON_CLUSTER): the shadow tables, views and EXCHANGE TABLES above are
// single-server statements.
// Only a replay from the earliest retained offset swaps by default: a partial replay (time, offsets)
// rebuilds only part of the history, so it compares and keeps its shadow tables unless
// `allowPartialSwap` is given.
import type { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import { assertIdentifier, type Db } from '../../clickhouse/client.ts';
import { REPLAY_ON_CLUSTER } from '../../clickhouse/cluster-ddl.ts';
import { TOPICS, type TopicKey } from '../../schemas/topics.ts';
import { type Config, topicName } from '../../services/common/config.ts';
import { type Kafka, setGroupOffsets } from '../../services/common/kafka/index.ts';
import type { Logger } from '../../services/common/logger.ts';
import { PROCESSORS, processorByName } from '../registry.ts';
import { BatchJournal } from '../runtime/journal.ts';
import { defaultGroupId, ProcessorRunner } from '../runtime/runtime.ts';
import type { CompareSpec, Processor, RuntimeDeps } from '../runtime/types.ts';
import { liveNamespace, lostBlocksKey, namespaceKey, type Streams } from '../service.ts';

export type ReplayFrom =
  | { kind: 'earliest' }
  | { kind: 'time'; ms: number }
  | { kind: 'offsets'; offsets: Map<number, bigint> };

export interface ReplayOptions {
  processor: string;
  from: ReplayFrom;
  /** swap after comparing (default: true for a replay from earliest, false otherwise) */
  swap?: boolean;
  /** allow swapping the result of a partial (time/offsets) replay */
  allowPartialSwap?: boolean;
}

export interface TableDiff {
  table: string;
  store_id: string;
  day: string;
  live: string;
  shadow: string;
}

export type ReplayEvent =
  | { type: 'phase'; phase: 'prepare' | 'consume' | 'cutover' | 'compare' | 'swap' | 'done'; message: string }
  | { type: 'progress'; done: number; total: number; eventsPerSecond: number }
  | { type: 'diff'; diff: TableDiff }
  | { type: 'result'; result: ReplayResult }
  | { type: 'error'; message: string };

export interface ReplayResult {
  runId: string;
  processor: string;
  messages: number;
  seconds: number;
  eventsPerSecond: number;
  tables: string[];
  differences: number;
  swapped: boolean;
  /** where the replay (and, after a swap, the live group) stopped, per partition */
  stoppedAt: Record<string, string>;
  /** wall time per phase: shadow DDL, consuming (incl. cut-over), compare, swap (`seconds` = the first two) */
  phaseSeconds: { prepare: number; consume: number; compare: number; swap: number };
  /** the replay runner's chunks and their cost per stage (ms summed over partitions) */
  chunks: {
    count: number;
    messages: number;
    stageMs: Record<string, number>;
    firstChunkAfterSeconds: number;
    lastChunkAfterSeconds: number;
  };
}

/** A backlog by definition: a replay reads in chunks at least this large (fewer inserts per table). */
export const REPLAY_MIN_BATCH_MESSAGES = 25_000;
export const REPLAY_MIN_BATCH_BYTES = 12 * 1024 * 1024;

export interface ReplayEnv {
  config: Config;
  db: Db;
  redis: Redis;
  kafka: Kafka;
  logger: Logger;
  /** the live processors of this process (single node); absent = distributed mode */
  streams?: Streams;
  /** runtime deps (decoder, DLQ, client factory); taken from `streams` when present */
  deps: RuntimeDeps;
  runOptions: Streams['runOptions'];
}

export class ReplayError extends Error {
  readonly status: number;
  /** the request field at fault, when there is one */
  readonly field: string | undefined;
  constructor(status: number, message: string, field?: string) {
    super(message);
    this.name = 'ReplayError';
    this.status = status;
    this.field = field;
  }
}

const SHADOW = '__shadow';
const MAX_DIFFS_PER_TABLE = 100;

/** Check a request before anything starts (unknown processor, partial swap without consent). */
export function validateReplay(opts: ReplayOptions): { processor: Processor<any>; swap: boolean } {
  // own properties only ('constructor' is no processor); `catalog-products` finds `catalog_products`
  const processor = processorByName(opts.processor);
  if (!processor)
    throw new ReplayError(
      422,
      `unknown processor ${JSON.stringify(opts.processor)}; known: ${Object.keys(PROCESSORS).join(', ')}`,
      'processor',
    );
  const full = opts.from.kind === 'earliest';
  const swap = opts.swap ?? full;
  if (swap && !full && !opts.allowPartialSwap) {
    throw new ReplayError(
      422,
      'a partial replay (from a time or offsets) rebuilds only part of the history; pass allowPartialSwap to swap it anyway',
      'swap',
    );
  }
  return { processor, swap };
}

export async function runReplay(
  env: ReplayEnv,
  opts: ReplayOptions,
  emit: (e: ReplayEvent) => void,
): Promise<ReplayResult> {
  const { processor, swap } = validateReplay(opts);
  const { db, redis, kafka, logger } = env;
  if (db.cluster) throw new ReplayError(501, REPLAY_ON_CLUSTER);
  const lockKey = `sd:streams:replay-lock:${processor.name}`;
  const runId = newUlid();
  if ((await redis.set(lockKey, runId, 'EX', 6 * 3600, 'NX')) !== 'OK') {
    throw new ReplayError(409, `a replay of ${processor.name} is already running`);
  }
  const topic = topicName(env.config, TOPICS[processor.topic as TopicKey].name);
  const liveGroup = defaultGroupId(processor.name);
  const replayGroup = `streams.replay.${processor.name}.${runId}`;
  const namespace = `replay-${runId}`;
  const admin = kafka.admin();
  await admin.connect();
  const live = env.streams?.runners.get(processor.name);
  let liveStopped = false;
  let runner: ProcessorRunner<any> | undefined;
  const t0 = performance.now();
  try {
    if (!live) {
      const described = await admin.describeGroups([liveGroup]);
      const members = described.groups[0]?.members.length ?? 0;
      if (members > 0)
        throw new ReplayError(
          409,
          `consumer group ${liveGroup} has ${members} active member(s): stop the ${processor.name} processor before replaying it`,
        );
    }

    // ---- 1. shadow tables and views
    emit({ type: 'phase', phase: 'prepare', message: `creating shadow tables for ${processor.name}` });
    const tables = [...processor.tables.views.map((v) => v.target), ...processor.tables.written];
    const liveViews = await createShadows(db, processor, tables);
    const tPrepared = performance.now();

    // ---- 2. start offsets and the first target
    const watermarks = await admin.fetchTopicOffsets(topic);
    const low = new Map(watermarks.map((w) => [w.partition, BigInt(w.low)]));
    const high = new Map(watermarks.map((w) => [w.partition, BigInt(w.high)]));
    const start = new Map<number, bigint>();
    if (opts.from.kind === 'earliest') {
      for (const [p, o] of low) start.set(p, o);
    } else if (opts.from.kind === 'time') {
      const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, opts.from.ms);
      for (const r of byTime) {
        const o = BigInt(r.offset);
        start.set(r.partition, o < 0n ? (high.get(r.partition) ?? 0n) : o);
      }
    } else {
      for (const [p, o] of low) start.set(p, opts.from.offsets.get(p) ?? o);
      for (const p of opts.from.offsets.keys())
        if (!low.has(p)) throw new ReplayError(422, `topic ${topic} has no partition ${p}`);
    }
    for (const [p, o] of start) {
      const lo = low.get(p) ?? 0n;
      const hi = high.get(p) ?? 0n;
      start.set(p, o < lo ? lo : o > hi ? hi : o);
    }
    await setGroupOffsets(kafka, admin, replayGroup, topic, start);

    // ---- 3. consume to the high watermarks
    emit({ type: 'phase', phase: 'consume', message: `replaying ${topic} into shadow tables` });
    const base = env.runOptions();
    runner = new ProcessorRunner(processor, env.deps, {
      ...base,
      // the per-chunk cost (one insert per table, a part per table and view) is paid per chunk: read the
      // backlog in large ones
      maxBatchMessages: Math.max(base.maxBatchMessages, REPLAY_MIN_BATCH_MESSAGES),
      maxBatchBytes: Math.max(base.maxBatchBytes, REPLAY_MIN_BATCH_BYTES),
      groupId: replayGroup,
      tableSuffix: SHADOW,
      stateNamespace: namespace,
      replay: true,
      stopAt: high,
    });
    for (const [p, o] of start) runner.notePosition(p, o);
    let target = high;
    const done = () => {
      let n = 0;
      for (const [p, s] of start) n += Number((runner?.positions.get(p) ?? s) - s);
      return n;
    };
    const ticker = setInterval(() => {
      const elapsed = (performance.now() - t0) / 1000;
      emit({
        type: 'progress',
        done: done(),
        total: sumTarget(start, target),
        eventsPerSecond: Math.round(done() / Math.max(elapsed, 0.001)),
      });
    }, 500);
    try {
      await runner.start();
      await runner.whenDone();

      // ---- 4. cut-over: stop live, catch up to exactly where live stopped
      emit({
        type: 'phase',
        phase: 'cutover',
        message: `stopping the live ${processor.name} processor and catching up to its position`,
      });
      if (live) {
        await live.stop();
        liveStopped = true;
      }
      const committed = await admin.fetchOffsets({ groupId: liveGroup, topics: [topic] });
      target = new Map(high);
      for (const t of committed) {
        for (const cp of t.partitions) {
          const c = BigInt(cp.offset);
          const h = high.get(cp.partition) ?? 0n;
          target.set(cp.partition, c > h ? c : h);
        }
      }
      runner.extendStopAt(target);
      await runner.whenDone();
    } finally {
      clearInterval(ticker);
    }
    await runner.stop();
    const stats = runner.stats;
    runner = undefined;
    const messages = sumTarget(start, target);
    const seconds = (performance.now() - t0) / 1000;
    emit({
      type: 'progress',
      done: messages,
      total: messages,
      eventsPerSecond: Math.round(messages / Math.max(seconds, 0.001)),
    });

    // ---- 5. compare
    emit({ type: 'phase', phase: 'compare', message: 'comparing live and shadow per store and day' });
    const sinceDay = opts.from.kind === 'time' ? new Date(opts.from.ms).toISOString().slice(0, 10) : undefined;
    const tCompare = performance.now();
    let differences = 0;
    for (const t of tables) {
      const diffs = await compareTable(db, t, processor.tables.compare[t], sinceDay);
      differences += diffs.length;
      for (const d of diffs.slice(0, MAX_DIFFS_PER_TABLE)) emit({ type: 'diff', diff: d });
    }

    // ---- 6. swap
    const tSwap = performance.now();
    let swapped = false;
    if (swap) {
      emit({ type: 'phase', phase: 'swap', message: `swapping ${tables.length} tables` });
      for (const t of tables)
        await db.command(`EXCHANGE TABLES ${assertIdentifier(t)} AND ${assertIdentifier(t + SHADOW)}`);
      swapped = true;
      await dropShadowViews(db, processor);
      await rebindLiveViews(db, liveViews);
      const oldNamespace = await liveNamespace(redis, processor.name);
      await setGroupOffsets(kafka, admin, liveGroup, topic, target);
      await new BatchJournal(redis, liveGroup).reset(topic, [...target.keys()]);
      await redis.set(namespaceKey(processor.name), namespace);
      // the rebuilt tables hold every block the engine had lost (streams/service.ts reportLostBlocks)
      await redis.del(...tables.map((t) => lostBlocksKey(db.database, t)));
      void deleteNamespace(redis, oldNamespace, processor.name, logger);
    }
    await dropShadowViews(db, processor);
    const tEnd = performance.now();
    const r3 = (ms: number) => Math.round(ms) / 1000;

    const result: ReplayResult = {
      runId,
      processor: processor.name,
      messages,
      seconds: Math.round(seconds * 1000) / 1000,
      eventsPerSecond: Math.round(messages / Math.max(seconds, 0.001)),
      tables,
      differences,
      swapped,
      stoppedAt: Object.fromEntries([...target].map(([p, o]) => [String(p), o.toString()])),
      phaseSeconds: {
        prepare: r3(tPrepared - t0),
        consume: r3(tCompare - tPrepared),
        compare: r3(tSwap - tCompare),
        swap: r3(tEnd - tSwap),
      },
      chunks: {
        count: stats.chunks,
        messages: stats.messages,
        stageMs: Object.fromEntries([...stats.ms].map(([k, v]) => [k, Math.round(v)])),
        firstChunkAfterSeconds: r3(stats.firstChunkAt - stats.startedAt),
        lastChunkAfterSeconds: r3(stats.lastChunkAt - stats.startedAt),
      },
    };
    emit({
      type: 'phase',
      phase: 'done',
      message: swapped ? 'swapped; live processing resumed' : 'done (not swapped)',
    });
    emit({ type: 'result', result });
    return result;
  } finally {
    if (runner) await runner.stop().catch(() => {});
    if (liveStopped && env.streams) {
      await env.streams
        .restart(processor.name)
        .catch((err) => logger.error({ err }, 'restarting the live processor after replay failed'));
    }
    await admin.deleteGroups([replayGroup]).catch(() => {});
    await new BatchJournal(redis, replayGroup).reset(topic, [...(await partitionsOf(admin, topic))]).catch(() => {});
    await admin.disconnect().catch(() => {});
    await redis
      .eval(
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
        1,
        lockKey,
        runId,
      )
      .catch(() => {});
  }
}

async function partitionsOf(admin: ReturnType<Kafka['admin']>, topic: string): Promise<number[]> {
  const w = await admin.fetchTopicOffsets(topic);
  return w.map((x) => x.partition);
}

function sumTarget(start: Map<number, bigint>, target: Map<number, bigint>): number {
  let n = 0;
  for (const [p, s] of start) {
    const t = target.get(p) ?? s;
    if (t > s) n += Number(t - s);
  }
  return n;
}

/**
 * Drop old shadows, create `t__shadow` for each table with the live DDL, then the shadow views.
 * Returns the live materialized views' DDL as it was before anything was swapped (view → statement).
 */
export async function createShadows(db: Db, processor: Processor<any>, tables: string[]): Promise<Map<string, string>> {
  await dropShadowViews(db, processor);
  for (const t of tables) {
    const shadow = assertIdentifier(t + SHADOW);
    await db.command(`DROP TABLE IF EXISTS ${shadow} SYNC`);
    await db.command(`CREATE TABLE ${shadow} AS ${assertIdentifier(t)}`);
  }
  const names = [...tables, ...processor.tables.views.map((v) => v.view)];
  const live = new Map<string, string>();
  for (const v of processor.tables.views) {
    const [row] = await db.query<{ statement: string }>(`SHOW CREATE TABLE ${assertIdentifier(v.view)}`);
    if (!row) throw new Error(`materialized view ${v.view} not found`);
    live.set(v.view, row.statement);
    await db.command(shadowDdl(row.statement, db.database, names));
  }
  return live;
}

/**
 * After `EXCHANGE TABLES`: re-create each live materialized view from its pre-swap DDL (which names the
 * live source and target), so it reads and writes the swapped-in tables whether the server bound it by
 * name or by UUID. `CREATE OR REPLACE` swaps the definition atomically. Then checks that no live view
 * names a shadow table.
 */
export async function rebindLiveViews(db: Db, statements: Map<string, string>): Promise<void> {
  for (const [view, statement] of statements) {
    if (!/^CREATE MATERIALIZED VIEW /.test(statement))
      throw new Error(`unexpected DDL of ${view}: ${statement.slice(0, 80)}`);
    await db.command(statement.replace(/^CREATE MATERIALIZED VIEW /, 'CREATE OR REPLACE MATERIALIZED VIEW '));
    const [row] = await db.query<{ statement: string }>(`SHOW CREATE TABLE ${assertIdentifier(view)}`);
    if (!row || row.statement.includes(SHADOW))
      throw new Error(`materialized view ${view} still refers to a shadow table after the swap`);
  }
}

/** Rewrite `db.name` references of the given tables/views to their shadows. */
export function shadowDdl(statement: string, database: string, names: string[]): string {
  let out = statement;
  for (const n of [...names].sort((a, b) => b.length - a.length)) {
    const re = new RegExp(`(\\b${database}\\.)\`?${n}\`?(?![A-Za-z0-9_])`, 'g');
    out = out.replace(re, `$1${n}${SHADOW}`);
  }
  return out;
}

async function dropShadowViews(db: Db, processor: Processor<any>) {
  for (const v of processor.tables.views)
    await db.command(`DROP VIEW IF EXISTS ${assertIdentifier(v.view + SHADOW)} SYNC`);
}

/** Per store and day, the table's measure in live and shadow; returns the rows that differ. */
export async function compareTable(
  db: Db,
  table: string,
  spec: CompareSpec | undefined,
  sinceDay?: string,
): Promise<TableDiff[]> {
  if (!spec) return [];
  const final = spec.final || /_raw$/.test(table) ? ' FINAL' : '';
  const q = (t: string) =>
    `SELECT store_id, toString(toDate(${spec.day})) AS d, toString(${spec.measure}) AS m FROM ${assertIdentifier(t)}${final}
     ${sinceDay ? 'WHERE toDate(' + spec.day + ') >= toDate({since:String})' : ''} GROUP BY store_id, d`;
  const params = sinceDay ? { since: sinceDay } : undefined;
  const liveRows = await db.query<{ store_id: string; d: string; m: string }>(q(table), params);
  const shadowRows = await db.query<{ store_id: string; d: string; m: string }>(q(table + SHADOW), params);
  const key = (r: { store_id: string; d: string }) => `${r.store_id}\u0000${r.d}`;
  const liveMap = new Map(liveRows.map((r) => [key(r), r]));
  const shadowMap = new Map(shadowRows.map((r) => [key(r), r]));
  const diffs: TableDiff[] = [];
  for (const k of new Set([...liveMap.keys(), ...shadowMap.keys()])) {
    const l = liveMap.get(k);
    const s = shadowMap.get(k);
    if (l?.m === s?.m) continue;
    const [store_id, day] = k.split('\u0000');
    diffs.push({ table, store_id, day, live: l?.m ?? '0', shadow: s?.m ?? '0' });
  }
  return diffs.sort((a, b) => (a.store_id + a.day < b.store_id + b.day ? -1 : 1));
}

async function deleteNamespace(redis: Redis, namespace: string, processor: string, logger: Logger) {
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(
        cursor,
        'MATCH',
        `sd:streams:state:${namespace}:${processor}:*`,
        'COUNT',
        1000,
      );
      if (keys.length) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch (err) {
    logger.warn({ err: (err as Error).message, namespace }, 'could not delete the old state namespace');
  }
}
