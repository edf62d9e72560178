// The consumer runtime: runs one processor over its topic with the delivery rules of DESIGN §4.
//
// Per fetched partition batch, in offset order, for each chunk of at most `maxBatchMessages`:
//   1. the chunk's [first, last] is cut at a boundary recorded in the batch journal when one exists
//      (a retry after a crash reproduces the lost attempt exactly), then recorded;
//   2. decode (Confluent framing + Avro via the registry) and validate (zod); failures go to
//      `<topic>.dlq` with the reason and the original position in headers, and never block the partition.
//      A tombstone (no value) goes to the processor's `parseTombstone(key)` when it has one (a delete on
//      a compacted topic), else to the DLQ;
//   3. duplicates by business id are removed (claims.ts; tombstones are never duplicates);
//   4. the processor turns the rest into rows per table (keyed state Redis has no record of is read back
//      from the processor's ledger as it stood before the chunk: `ctx.ledgerRows`, ledger.ts);
//   5. each table is written with insert_deduplication_token `${topic}/${partition}/${first}-${last}`
//      (plus `/${table}` when the processor writes several tables); a failing write is retried until it
//      succeeds (withRetry: the partition waits, nothing is dead-lettered or committed meanwhile);
//   6. the processor's after-write hook runs (state saves, notifications);
//   7. only then the offset `last + 1` is resolved and committed.
// A crash anywhere before 7 re-reads the same chunk: the writes that already happened are dropped by
// ClickHouse, the rest happen. On shutdown or rebalance the loop stops between chunks and never commits
// unwritten data.
import type { TopicKey } from '../../schemas/topics.ts';
import { dlqTopic } from '../../schemas/topics.ts';
import { Claims } from './claims.ts';
import { BatchJournal } from './journal.ts';
import { readLedger } from './ledger.ts';
import { streamMetrics } from './metrics.ts';
import { timeSlicer } from './util.ts';
import {
  type ConsumerClient,
  type Decoded,
  type DlqRecord,
  type ProcessContext,
  type Processor,
  type RuntimeDeps,
  type SourceBatch,
  type SourceMessage,
  UndecodableError,
} from './types.ts';

export interface RunOptions {
  /** consumer group id; default `streams.<processor>` */
  groupId?: string;
  /** physical table suffix: '' (live) or '__shadow' (replay) */
  tableSuffix?: string;
  /** namespace for processor state in Redis; default 'live' */
  stateNamespace?: string;
  replay?: boolean;
  lingerMs: number;
  /** the linger of processors that ask for `fetch: 'batched'` (default: lingerMs) */
  batchedLingerMs?: number;
  /** live mode: how long a fetch after an empty one waits for the first message (ConsumerClientOptions.idleWaitMs) */
  idleFetchWaitMs?: number;
  maxBatchMessages: number;
  maxBatchBytes: number;
  dedupHorizonHours: number;
  sessionTimeoutMs?: number;
  /** stop consuming each partition at this offset (exclusive); used by replay */
  stopAt?: Map<number, bigint>;
}

export function defaultGroupId(processorName: string): string {
  return `streams.${processorName}`;
}

/** how often stream_consumer_lag is read from the broker for every partition (high watermark − committed) */
export const LAG_REFRESH_MS = 2_000;

/** the longest back-off between two attempts of a failing write */
export const RETRY_MAX_MS = 3_000;

export class ProcessorRunner<T> {
  readonly processor: Processor<T>;
  readonly groupId: string;
  readonly topic: string;
  private readonly deps: RuntimeDeps;
  private readonly opts: RunOptions;
  private readonly journal: BatchJournal;
  private readonly claims: Claims;
  private readonly ctx: ProcessContext;
  private readonly mode: string;
  private client: ConsumerClient | undefined;
  /** next offset to read per partition, as committed by this runner */
  readonly positions = new Map<number, bigint>();
  private stopped = false;
  private paused = false;
  private readonly inFlight = new Set<Promise<void>>();
  private doneWaiters: (() => void)[] = [];
  /** back-off sleeps of failing writes, woken by stop() and pause() */
  private readonly wakers = new Set<() => void>();
  /** cumulative wall time per stage (ms) and chunk counts: what a chunk costs, for the benchmark */
  readonly stats = new StageStats();

  constructor(processor: Processor<T>, deps: RuntimeDeps, opts: RunOptions) {
    this.processor = processor;
    this.deps = deps;
    this.opts = opts;
    this.groupId = opts.groupId ?? defaultGroupId(processor.name);
    this.topic = deps.topicName(processor.topic as TopicKey);
    this.journal = new BatchJournal(deps.redis, this.groupId);
    this.claims = new Claims(
      deps.redis,
      Math.min(processor.dedupHorizonHours ?? opts.dedupHorizonHours, opts.dedupHorizonHours),
      processor.ledger
        ? { db: deps.db, spec: processor.ledger, logger: deps.logger.child({ processor: processor.name }) }
        : undefined,
    );
    this.mode = opts.replay ? 'replay' : 'live';
    const suffix = opts.tableSuffix ?? '';
    const ns = opts.stateNamespace ?? 'live';
    this.ctx = {
      db: deps.db,
      redis: deps.redis,
      logger: deps.logger.child({ processor: processor.name, mode: this.mode }),
      table: (name) => `${name}${suffix}`,
      stateKey: (...parts) => `sd:streams:state:${ns}:${processor.name}:${parts.join(':')}`,
      replay: opts.replay ?? false,
      slice: timeSlicer(),
    };
  }

  get logger() {
    return this.ctx.logger;
  }

  async start(): Promise<void> {
    this.stats.startedAt = performance.now();
    this.client = this.deps.createClient({
      groupId: this.groupId,
      topics: [this.topic],
      fromBeginning: true,
      ...this.fetchWait(),
      maxBytesPerPartition: this.opts.maxBatchBytes,
      sessionTimeoutMs: this.sessionTimeoutMs,
    });
    await this.client.start((batch) => this.track(this.onBatch(batch)));
    // the lag of every partition of the topic, whether this member fetches it or not: a partition nobody
    // consumes (a stalled or leaked member holding it) shows its backlog instead of the last value set
    // after a commit
    this.lagTimer = setInterval(() => {
      this.refreshLag().catch(() => {});
    }, LAG_REFRESH_MS);
    this.lagTimer.unref();
    this.logger.info({ group: this.groupId, topic: this.topic }, 'processor started');
  }

  /**
   * The broker holds a fetch until `minBytes` arrived or the linger passed. A batched processor's fetch
   * waits out its linger (its minBytes is out of reach at its rates), so each partition's chunk — one
   * insert per table, ≈ 30 ms of chDB CPU however small — gathers that long's messages.
   */
  private fetchWait(): { lingerMs: number; minBytes: number; idleWaitMs?: number } {
    // a replay reads a backlog to given offsets: it never idles, and must not wait out a long poll at its end
    const idle =
      this.opts.replay || this.opts.idleFetchWaitMs === undefined ? {} : { idleWaitMs: this.opts.idleFetchWaitMs };
    if (this.processor.fetch === 'batched' && !this.opts.replay) {
      return { lingerMs: this.opts.batchedLingerMs ?? this.opts.lingerMs, minBytes: 8 * 1024 * 1024, ...idle };
    }
    return { lingerMs: this.opts.lingerMs, minBytes: 64 * 1024, ...idle };
  }

  private async track(p: Promise<void>): Promise<void> {
    this.inFlight.add(p);
    try {
      await p;
    } finally {
      this.inFlight.delete(p);
    }
  }

  private async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** Stop consuming; the chunk being written finishes and commits, nothing after it is started. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.lagTimer);
    this.wakeSleepers();
    await this.settle();
    await this.client?.stop();
    this.logger.info({ group: this.groupId }, 'processor stopped');
  }

  /** Pause between chunks and wait for the ones in flight. */
  async pause(): Promise<void> {
    this.paused = true;
    this.client?.pause();
    this.wakeSleepers();
    await this.settle();
  }

  resume(): void {
    this.paused = false;
    this.client?.resume();
  }

  committed(): Promise<Map<number, bigint>> {
    if (!this.client) throw new Error('processor not started');
    return this.client.committed(this.topic);
  }

  highWatermarks(): Promise<Map<number, bigint>> {
    if (!this.client) throw new Error('processor not started');
    return this.client.highWatermarks(this.topic);
  }

  /** resolves once every partition in `stopAt` has been committed up to its stop offset */
  whenDone(): Promise<void> {
    if (this.isDone()) return Promise.resolve();
    return new Promise((r) => this.doneWaiters.push(r));
  }

  private isDone(): boolean {
    const stopAt = this.opts.stopAt;
    if (!stopAt) return false;
    for (const [p, end] of stopAt) if ((this.positions.get(p) ?? -1n) < end) return false;
    return true;
  }

  /** move the stop offsets (replay catch-up to the live consumer's position) */
  extendStopAt(stopAt: Map<number, bigint>) {
    this.opts.stopAt = new Map(stopAt);
    this.checkDone();
  }

  /** note a known starting position (replay: where the group was set to start) */
  notePosition(partition: number, next: bigint) {
    this.positions.set(partition, next);
    this.checkDone();
  }

  private checkDone() {
    if (this.doneWaiters.length && this.isDone()) {
      for (const w of this.doneWaiters.splice(0)) w();
    }
  }

  private async onBatch(batch: SourceBatch): Promise<void> {
    // the group membership is kept alive while the batch is worked on, however long one stage takes (a
    // processor fetching images, a large chunk's inserts, a write retried until the engine is back): a
    // member that sends no heartbeat for the session timeout is expired, its commit refused and its chunk
    // read again by the next member. kafkajs sends a heartbeat only once its interval has passed, so
    // asking often costs nothing.
    const keeper = setInterval(
      () => void batch.heartbeat().catch(() => {}),
      Math.max(100, Math.floor(this.sessionTimeoutMs / 10)),
    );
    try {
      await this.consumeBatch(batch);
    } finally {
      clearInterval(keeper);
    }
  }

  private get sessionTimeoutMs(): number {
    return this.opts.sessionTimeoutMs ?? 30_000;
  }

  private async consumeBatch(batch: SourceBatch): Promise<void> {
    const { topic, partition } = batch;
    let msgs = batch.messages;
    const stop = this.opts.stopAt?.get(partition);
    if (stop !== undefined) msgs = msgs.filter((m) => BigInt(m.offset) < stop);
    let i = 0;
    while (i < msgs.length) {
      if (this.stopped || this.paused || !batch.isActive()) return;
      const first = BigInt(msgs[i].offset);
      // a backlog longer than one chunk is cut into equal chunks (10,800 → 2 × 5,400, not 10,000 + 800:
      // every chunk pays the same fixed cost of one insert per table)
      const remaining = msgs.length - i;
      let end = i + Math.ceil(remaining / Math.ceil(remaining / this.opts.maxBatchMessages));
      const tj = performance.now();
      if (!this.stats.firstChunkAt) this.stats.firstChunkAt = tj;
      const recorded = await this.journal.recordedEnd(topic, partition, first);
      if (recorded !== undefined) {
        // reproduce the boundaries of an attempt that was begun but not committed
        let j = i;
        while (j < msgs.length && BigInt(msgs[j].offset) <= recorded) j++;
        if (BigInt(msgs[j - 1].offset) < recorded && j === msgs.length) {
          // this fetch ended before the recorded end: fetch again from `first` (nothing resolved)
          this.logger.debug(
            { partition, first: String(first), recorded: String(recorded) },
            'waiting for the journaled batch end',
          );
          await new Promise((r) => setTimeout(r, 50));
          return;
        }
        end = j;
      }
      const chunk = msgs.slice(i, end);
      const last = BigInt(chunk[chunk.length - 1].offset);
      // entries are pruned only below the offset this runner saw committed: after a failed commit the
      // fetch goes on from the resolved offset, and a re-join re-reads from the committed one (journal.ts)
      if (recorded === undefined)
        await this.journal.begin(topic, partition, first, last, this.positions.get(partition));
      const t0 = performance.now();
      this.stats.add('journal', t0 - tj);
      try {
        await this.processChunk(batch, chunk, first, last);
      } catch (err) {
        if (!(err instanceof WriteAbandoned)) throw err;
        this.logger.info({ partition, first: String(first), last: String(last) }, err.message);
        return;
      }
      const tc = performance.now();
      batch.resolve(last.toString());
      await batch.commit((last + 1n).toString());
      this.stats.add('commit', performance.now() - tc);
      this.stats.chunk(chunk.length, msgs.length);
      this.positions.set(partition, last + 1n);
      const hw = BigInt(batch.highWatermark);
      streamMetrics.lag.set(
        { processor: this.processor.name, mode: this.mode, topic, partition: String(partition) },
        Number(hw > last ? hw - last - 1n : 0n),
      );
      streamMetrics.batchSize.observe({ processor: this.processor.name, mode: this.mode }, chunk.length);
      streamMetrics.batchSeconds.observe(
        { processor: this.processor.name, mode: this.mode },
        (performance.now() - t0) / 1000,
      );
      const newest = Number(chunk[chunk.length - 1].timestamp);
      if (Number.isFinite(newest) && !this.opts.replay) {
        streamMetrics.freshness.observe(
          { processor: this.processor.name, mode: this.mode },
          Math.max(0, Date.now() - newest) / 1000,
        );
      }
      this.checkDone();
      i = end;
    }
    // everything below the stop offset is written: the partition is done even if offsets had gaps
    if (stop !== undefined && msgs.length < batch.messages.length) {
      if ((this.positions.get(partition) ?? -1n) < stop) {
        this.positions.set(partition, stop);
        this.checkDone();
      }
      // nothing is resolved past the stop offset, so the client would fetch the same records again at
      // once: slow that loop down until the stop offset is extended or the runner stopped
      if (msgs.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async processChunk(batch: SourceBatch, chunk: SourceMessage[], first: bigint, last: bigint) {
    const { topic, partition } = batch;
    const name = this.processor.name;
    const decoded: Decoded<T>[] = [];
    const dlq: DlqRecord[] = [];
    const toDlq = (m: SourceMessage, kind: string, reason: string) => {
      streamMetrics.dlq.inc({ processor: name, mode: this.mode, reason: kind });
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(m.headers)) if (v !== undefined) headers[k] = v.toString();
      Object.assign(headers, {
        'x-dlq-reason': `${kind}: ${reason}`.slice(0, 2000),
        'x-dlq-original-topic': topic,
        'x-dlq-original-partition': String(partition),
        'x-dlq-original-offset': m.offset,
        'x-dlq-original-timestamp': m.timestamp,
        'x-dlq-processor': name,
      });
      dlq.push({ topic: dlqTopic(topic), key: m.key, value: m.value, headers });
    };
    let t = performance.now();
    const lap = (stage: string) => {
      const now = performance.now();
      this.stats.add(stage, now - t);
      t = now;
    };
    for (const m of chunk) {
      // a large chunk decodes for long: let the read API's requests in between (single-node mode)
      const pause = this.ctx.slice();
      if (pause) await pause;
      const position = { topic, partition, offset: BigInt(m.offset) };
      if (!m.value || m.value.length === 0) {
        // a tombstone: a processor that knows deletes turns its key into a value, else it is poison
        if (!this.processor.parseTombstone) {
          toDlq(m, 'empty', 'message has no value');
          continue;
        }
        const parsed = this.processor.parseTombstone(m.key);
        if (!parsed.ok) {
          toDlq(m, 'invalid', `tombstone: ${parsed.reason}`);
          continue;
        }
        decoded.push({ value: parsed.value, position, brokerTime: Number(m.timestamp), tombstone: true });
        continue;
      }
      let raw: unknown;
      try {
        raw = this.deps.decoder.decode(m.value, topic);
        if (raw instanceof Promise) raw = await raw;
      } catch (err) {
        if (!(err instanceof UndecodableError)) throw err; // transient: retry the chunk, never DLQ good data
        toDlq(m, 'undecodable', err.message);
        continue;
      }
      const parsed = this.processor.parse(raw);
      if (!parsed.ok) {
        toDlq(m, 'invalid', parsed.reason);
        continue;
      }
      decoded.push({ value: parsed.value, position, brokerTime: Number(m.timestamp) });
    }

    lap('decode');
    // duplicates by business id: the first position to claim an id owns it (stable under re-reads).
    // Tombstones are never claimed nor dropped: a delete is not a repeat of its key's upsert.
    let kept = decoded;
    const keyOf = this.processor.dedupKey?.bind(this.processor);
    if (keyOf) {
      const withKey = decoded.map((d) => ({ d, key: d.tombstone ? undefined : keyOf(d.value) }));
      const claimed = withKey.filter((x) => x.key !== undefined);
      const owners = await this.claims.claim(
        topic,
        claimed.map((x) => ({ key: x.key as string, position: `${topic}/${partition}/${x.d.position.offset}` })),
      );
      const dup = new Set(claimed.filter((_, k) => !owners[k]).map((x) => x.d));
      kept = decoded.filter((d) => !dup.has(d));
      if (dup.size) streamMetrics.messages.inc({ processor: name, mode: this.mode, outcome: 'duplicate' }, dup.size);
    }

    lap('claims');
    if (dlq.length) {
      await this.deps.dlq.send(dlq);
      this.logger.warn(
        {
          partition,
          first: String(first),
          last: String(last),
          count: dlq.length,
          reason: dlq[0].headers['x-dlq-reason'],
        },
        'messages sent to the DLQ',
      );
    }

    lap('dlq');
    // keyed state Redis forgot is read back from the ledger as it was before this chunk (runtime/ledger.ts)
    const ledger = this.processor.ledger;
    const ctx: ProcessContext = ledger
      ? {
          ...this.ctx,
          ledgerRows: (items) =>
            readLedger(this.deps.db, this.ctx.table(ledger.table), ledger, items, { partition, offset: first }),
        }
      : this.ctx;
    const result = kept.length ? await this.processor.process(kept, ctx, partition) : { writes: [] };
    lap('process');
    const multi = this.processor.tables.written.length > 1;
    for (const w of result.writes) {
      if (w.rows.length === 0) continue;
      const token = `${topic}/${partition}/${first}-${last}${multi ? `/${w.table}` : ''}`;
      await this.withRetry(() => this.deps.db.insert(this.ctx.table(w.table), w.rows, { dedupToken: token }), {
        batch,
        first,
        last,
        table: w.table,
      });
      streamMetrics.rows.inc({ processor: name, mode: this.mode, table: w.table }, w.rows.length);
      lap(`insert ${w.table}`);
      this.stats.rows.set(w.table, (this.stats.rows.get(w.table) ?? 0) + w.rows.length);
    }
    if (result.afterWrite) await this.withRetry(result.afterWrite, { batch, first, last, table: 'afterWrite' });
    lap('afterWrite');
    streamMetrics.messages.inc({ processor: name, mode: this.mode, outcome: 'written' }, kept.length);
    if (dlq.length) streamMetrics.messages.inc({ processor: name, mode: this.mode, outcome: 'dlq' }, dlq.length);
  }

  /**
   * A write (ClickHouse insert, after-write hook) is retried until it succeeds: a failing engine (down,
   * out of disk, refusing inserts) is never the messages' fault, so nothing is dead-lettered, skipped or
   * committed meanwhile. The partition's consumption waits on this chunk (its batch is not resolved), the
   * consumer keeps its group membership (onBatch's heartbeats), `stream_write_retries_total` counts the attempts,
   * `stream_writes_failing` shows the waiting partitions and `stream_consumer_lag` the backlog (refreshed
   * from the broker while waiting). Back-off doubles from 200 ms to RETRY_MAX_MS. Once the write succeeds
   * the chunk goes on (its already written tables are dropped by their tokens) and the backlog follows.
   * Stop, pause or a revoked partition abandon the chunk uncommitted: it is read again with the same
   * boundaries (journal).
   */
  private async withRetry(fn: () => Promise<void>, what: WriteTarget): Promise<void> {
    const { batch, first, last, table } = what;
    const labels = { processor: this.processor.name, mode: this.mode };
    let failingSince = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        await fn();
        if (failingSince) {
          streamMetrics.writesFailing.dec(labels);
          this.logger.warn(
            {
              table,
              partition: batch.partition,
              first: String(first),
              last: String(last),
              attempts: attempt,
              failedForMs: Math.round(performance.now() - failingSince),
            },
            'write succeeded again: consumption resumes',
          );
        }
        return;
      } catch (err) {
        if (!failingSince) {
          failingSince = performance.now();
          streamMetrics.writesFailing.inc(labels);
        }
        const abandon = this.stopped || this.paused || !batch.isActive();
        if (abandon) {
          streamMetrics.writesFailing.dec(labels);
          throw new WriteAbandoned(err);
        }
        streamMetrics.writeRetries.inc(labels);
        const delay = Math.min(100 * 2 ** attempt, RETRY_MAX_MS);
        // every attempt while backing off, then about once a minute
        if (attempt <= 6 || attempt % Math.ceil(60_000 / RETRY_MAX_MS) === 0) {
          this.logger.warn(
            {
              err: (err as Error).message,
              table,
              partition: batch.partition,
              first: String(first),
              last: String(last),
              attempt,
              retryInMs: delay,
            },
            `write to ${table} failed: consumption of partition ${batch.partition} paused, nothing committed; retrying until it succeeds`,
          );
        }
        await this.refreshLag().catch(() => {});
        await this.sleep(delay);
      }
    }
  }

  private lagRefreshedAt = 0;
  private lagTimer: ReturnType<typeof setInterval> | undefined;

  /** stream_consumer_lag of every partition of the topic from the broker (high watermark − the group's
   *  committed offset), at most once a second: every LAG_REFRESH_MS and while a write is retried */
  private async refreshLag(): Promise<void> {
    if (!this.client || performance.now() - this.lagRefreshedAt < 1_000) return;
    this.lagRefreshedAt = performance.now();
    const [marks, committed] = await Promise.all([
      this.client.watermarks(this.topic),
      this.client.committed(this.topic),
    ]);
    for (const [partition, { low, high: hw }] of marks) {
      // no committed offset: the group starts from the beginning (the low watermark)
      const c = committed.get(partition) ?? -1n;
      const from = c < 0n ? low : c;
      streamMetrics.lag.set(
        { processor: this.processor.name, mode: this.mode, topic: this.topic, partition: String(partition) },
        Number(hw > from ? hw - from : 0n),
      );
    }
  }

  /** a back-off sleep that stop() and pause() cut short */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  private wakeSleepers(): void {
    for (const w of [...this.wakers]) w();
  }
}

interface WriteTarget {
  batch: SourceBatch;
  first: bigint;
  last: bigint;
  /** the table written, or `afterWrite` */
  table: string;
}

/** A failing write given up because the runner stops or pauses, or the partition was revoked (nothing committed). */
class WriteAbandoned extends Error {
  constructor(cause: unknown) {
    super(`write abandoned (stopping, pausing or partition revoked): ${(cause as Error).message}`, { cause });
  }
}

/** Cumulative wall-clock time per stage of the chunk loop (cheap enough to keep always on). */
export class StageStats {
  readonly ms = new Map<string, number>();
  /** rows written per table */
  readonly rows = new Map<string, number>();
  chunks = 0;
  messages = 0;
  /** messages in the fetched batches the chunks were cut from (sum over chunks) */
  fetched = 0;
  add(stage: string, ms: number): void {
    this.ms.set(stage, (this.ms.get(stage) ?? 0) + ms);
  }
  /** performance.now() at start(), at the first chunk's start and at the last chunk's commit */
  startedAt = 0;
  firstChunkAt = 0;
  lastChunkAt = 0;
  chunk(messages: number, fetched: number): void {
    this.lastChunkAt = performance.now();
    this.chunks++;
    this.messages += messages;
    this.fetched += fetched;
  }
}
