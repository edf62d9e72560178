// The consumer runtime: runs one processor over its topic with the delivery rules of DESIGN §4.
//
// A fetch whose partitions hold few messages altogether (a trickle) is one chunk of all of them: one insert
// per table instead of one per table and partition (journal.ts keeps such a chunk's messages, so a re-read
// rebuilds it whole). Otherwise, per fetched partition batch, in offset order, for each chunk of at most
// `maxBatchMessages`:
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
//      (a multi-partition chunk: `${topic}/${chunk id}`, journal.ts chunkId), plus `/${table}` when the
//      processor writes several tables; a failing write is retried until it
//      succeeds (withRetry: the partition waits, nothing is dead-lettered or committed meanwhile);
//   6. the processor's after-write hook runs (state saves, notifications);
//   7. only then the offset `last + 1` is resolved and committed.
// A crash anywhere before 7 re-reads the same chunk: the writes that already happened are dropped by
// ClickHouse, the rest happen. On shutdown or rebalance the loop stops between chunks and never commits
// unwritten data.
import type { TopicKey } from '../../schemas/topics.ts';
import { dlqTopic } from '../../schemas/topics.ts';
import { Claims } from './claims.ts';
import { BatchJournal, type ChunkPart, chunkId } from './journal.ts';
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
    await this.client.startFetches((batches) => this.track(this.onFetch(batches)));
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

  private async onFetch(batches: SourceBatch[]): Promise<void> {
    // the group membership is kept alive while the fetch is worked on, however long one stage takes (a
    // processor fetching images, a large chunk's inserts, a write retried until the engine is back): a
    // member that sends no heartbeat for the session timeout is expired, its commit refused and its chunk
    // read again by the next member. kafkajs sends a heartbeat only once its interval has passed, so
    // asking often costs nothing (any batch's heartbeat is the member's).
    const keeper = setInterval(
      () => void batches[0].heartbeat().catch(() => {}),
      Math.max(100, Math.floor(this.sessionTimeoutMs / 10)),
    );
    try {
      if (await this.consumeAsOneChunk(batches)) return;
      await inParallel(batches, PARTITIONS_IN_PARALLEL, (batch) => this.consumeBatch(batch));
    } finally {
      clearInterval(keeper);
    }
  }

  private get sessionTimeoutMs(): number {
    return this.opts.sessionTimeoutMs ?? 30_000;
  }

  /**
   * A fetch of several partitions with few messages altogether (a trickle spread over the partitions by
   * key) is written as one chunk: one insert per table, not one per table and partition — each insert
   * costs the engine milliseconds however few its rows. The chunk is journaled in every one of its
   * partitions with its messages (journal.ts), so whichever partition a re-read meets it in, and whoever
   * owns the others by then, the same chunk is rebuilt under the same tokens. False when the fetch is
   * not such a one (then each partition is its own run of chunks, as a re-read of a journaled chunk is).
   */
  private async consumeAsOneChunk(batches: SourceBatch[]): Promise<boolean> {
    if (batches.length < 2 || this.opts.replay || this.opts.stopAt) return false;
    let messages = 0;
    let bytes = 0;
    for (const b of batches) {
      messages += b.messages.length;
      for (const m of b.messages) bytes += (m.value?.length ?? 0) + (m.key?.length ?? 0);
    }
    if (messages > Math.min(this.opts.maxBatchMessages, ONE_CHUNK_MAX_MESSAGES) || bytes > ONE_CHUNK_MAX_BYTES)
      return false;
    const topic = batches[0].topic;
    const tj = performance.now();
    if (!this.stats.firstChunkAt) this.stats.firstChunkAt = tj;
    const parts: ChunkPart[] = batches.map((b) => ({
      partition: b.partition,
      first: BigInt(b.messages[0].offset),
      last: BigInt(b.messages[b.messages.length - 1].offset),
      messages: b.messages,
    }));
    const recorded = await this.journal.recordedMany(topic, parts);
    // a re-read: each partition follows its own journal
    if (recorded.some((r) => r !== undefined)) return false;
    const active = () => !this.stopped && !this.paused && batches.every((b) => b.isActive());
    if (!active()) return true;
    const id = chunkId(parts);
    await this.journal.beginChunk(topic, id, parts, this.positions);
    this.stats.add('journal', performance.now() - tj);
    const t0 = performance.now();
    if (!(await this.writeChunk(topic, parts, active))) return true;
    await this.journal.chunkWritten(topic, id);
    const byPartition = new Map(batches.map((b) => [b.partition, b]));
    await Promise.all(parts.map((p) => this.commit(byPartition.get(p.partition) as SourceBatch, p.last)));
    await this.journal.chunkCommitted(topic, id);
    this.chunkDone(parts, messages, t0);
    return true;
  }

  private async consumeBatch(batch: SourceBatch): Promise<void> {
    const { topic, partition } = batch;
    let msgs = batch.messages;
    const stop = this.opts.stopAt?.get(partition);
    if (stop !== undefined) msgs = msgs.filter((m) => BigInt(m.offset) < stop);
    let i = 0;
    while (i < msgs.length) {
      if (this.stopped || this.paused || !batch.isActive()) return;
      const active = () => !this.stopped && !this.paused && batch.isActive();
      const first = BigInt(msgs[i].offset);
      // a backlog longer than one chunk is cut into equal chunks (10,800 → 2 × 5,400, not 10,000 + 800:
      // every chunk pays the same fixed cost of one insert per table)
      const remaining = msgs.length - i;
      let end = i + Math.ceil(remaining / Math.ceil(remaining / this.opts.maxBatchMessages));
      const tj = performance.now();
      if (!this.stats.firstChunkAt) this.stats.firstChunkAt = tj;
      const recorded = await this.journal.recorded(topic, partition, first);
      if (recorded?.chunk !== undefined) {
        // a chunk of several partitions, begun and not committed here: rebuilt whole from its journaled
        // messages, this partition committed past its part
        const last = await this.consumeJournaledChunk(batch, recorded.chunk, recorded.last, active);
        if (last === undefined) return;
        while (i < msgs.length && BigInt(msgs[i].offset) <= last) i++;
        continue;
      }
      if (recorded !== undefined) {
        // reproduce the boundaries of an attempt that was begun but not committed
        let j = i;
        while (j < msgs.length && BigInt(msgs[j].offset) <= recorded.last) j++;
        if (BigInt(msgs[j - 1].offset) < recorded.last && j === msgs.length) {
          // this fetch ended before the recorded end: fetch again from `first` (nothing resolved)
          this.logger.debug(
            { partition, first: String(first), recorded: String(recorded.last) },
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
      const part: ChunkPart = { partition, first, last, messages: chunk };
      if (!(await this.writeChunk(topic, [part], active))) return;
      await this.commit(batch, last);
      this.chunkDone([part], msgs.length, t0);
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

  /**
   * A re-read met a journaled chunk of several partitions in `batch`'s partition (journal.ts). Its leader
   * (the chunk's lowest partition) writes it again from its kept messages — its tokens drop what the
   * first attempt wrote — and marks it written; any other partition of it is committed past its part
   * once it is marked, and waits until then. Returns this partition's last offset in the chunk, undefined
   * when nothing was committed (abandoned, or waiting for the leader).
   */
  private async consumeJournaledChunk(
    batch: SourceBatch,
    id: string,
    recordedLast: bigint,
    active: () => boolean,
  ): Promise<bigint | undefined> {
    const { topic, partition } = batch;
    const t0 = performance.now();
    const chunk = await this.journal.chunk(topic, id);
    if (!chunk) return this.consumeOrphanPart(batch, id, recordedLast, active);
    const mine = chunk.parts.find((p) => p.partition === partition);
    if (!mine) throw new Error(`journaled chunk ${id} has no part in partition ${partition}`);
    const leader = Math.min(...chunk.parts.map((p) => p.partition));
    if (!chunk.written) {
      if (partition !== leader) {
        // the leader's member writes it: fetch this partition again later (nothing resolved)
        this.logger.debug({ partition, chunk: id }, 'waiting for the leader of a journaled chunk');
        await this.sleep(200);
        return undefined;
      }
      if (!(await this.writeChunk(topic, chunk.parts, active))) return undefined;
      await this.journal.chunkWritten(topic, id);
    }
    if (!active()) return undefined;
    await this.commit(batch, mine.last);
    this.chunkDone([mine], batch.messages.length, t0);
    return mine.last;
  }

  /**
   * A journaled chunk of several partitions whose kept messages are gone (Redis lost them, or they
   * expired): this partition's part is written on its own from the fetch, cut at the recorded boundary. A
   * table the lost attempt had written then holds these rows twice — the journal's own loss, as for a
   * single partition's chunk whose boundary is forgotten.
   */
  private async consumeOrphanPart(
    batch: SourceBatch,
    id: string,
    last: bigint,
    active: () => boolean,
  ): Promise<bigint | undefined> {
    const { topic, partition } = batch;
    const msgs = batch.messages.filter((m) => BigInt(m.offset) <= last);
    if (msgs.length === 0 || BigInt(msgs[msgs.length - 1].offset) < last) {
      // this fetch ended before the recorded end: fetch again (nothing resolved)
      await this.sleep(50);
      return undefined;
    }
    this.logger.warn(
      { partition, chunk: id },
      'a journaled chunk of several partitions has no kept messages: its part in this partition is written alone',
    );
    const t0 = performance.now();
    const part: ChunkPart = { partition, first: BigInt(msgs[0].offset), last, messages: msgs };
    await this.journal.begin(topic, partition, part.first, last, this.positions.get(partition));
    if (!(await this.writeChunk(topic, [part], active))) return undefined;
    await this.commit(batch, last);
    this.chunkDone([part], batch.messages.length, t0);
    return last;
  }

  /** resolve and commit a partition past `last` */
  private async commit(batch: SourceBatch, last: bigint): Promise<void> {
    const tc = performance.now();
    batch.resolve(last.toString());
    await batch.commit((last + 1n).toString());
    this.stats.add('commit', performance.now() - tc);
    this.positions.set(batch.partition, last + 1n);
    const hw = BigInt(batch.highWatermark);
    streamMetrics.lag.set(
      { processor: this.processor.name, mode: this.mode, topic: batch.topic, partition: String(batch.partition) },
      Number(hw > last ? hw - last - 1n : 0n),
    );
  }

  /** a chunk is committed: its metrics, and the waiters of a replay's stop offsets */
  private chunkDone(parts: ChunkPart[], fetched: number, t0: number): void {
    const messages = parts.reduce((n, p) => n + p.messages.length, 0);
    this.stats.chunk(messages, fetched);
    const labels = { processor: this.processor.name, mode: this.mode };
    streamMetrics.batchSize.observe(labels, messages);
    streamMetrics.batchSeconds.observe(labels, (performance.now() - t0) / 1000);
    let newest = Number.NEGATIVE_INFINITY;
    for (const p of parts) {
      const t = Number(p.messages[p.messages.length - 1]?.timestamp);
      if (t > newest) newest = t;
    }
    if (Number.isFinite(newest) && !this.opts.replay) {
      streamMetrics.freshness.observe(labels, Math.max(0, Date.now() - newest) / 1000);
    }
    this.checkDone();
  }

  /**
   * processChunk under the chunk's insert tokens: `${topic}/${partition}/${first}-${last}` for one
   * partition's run, `${topic}/${chunkId}` for a chunk of several (a rebuilt one has the same ranges, hence
   * the same id). False when a failing write of it was given up (stopping, pausing, revoked: logged).
   */
  private async writeChunk(topic: string, parts: ChunkPart[], active: () => boolean) {
    const token =
      parts.length === 1
        ? `${topic}/${parts[0].partition}/${parts[0].first}-${parts[0].last}`
        : `${topic}/${chunkId(parts)}`;
    try {
      await this.processChunk(topic, parts, token, active);
      return true;
    } catch (err) {
      if (!(err instanceof WriteAbandoned)) throw err;
      this.logger.info(chunkWhere(parts).fields, err.message);
      return false;
    }
  }

  /**
   * Decode, validate, deduplicate, transform and write one chunk (the messages of `parts`, each part one
   * partition's run), under the insert tokens `${token}[/${table}]`. `active` false makes a failing write
   * give up (WriteAbandoned).
   */
  private async processChunk(topic: string, parts: ChunkPart[], token: string, active: () => boolean) {
    const name = this.processor.name;
    const decoded: Decoded<T>[] = [];
    const dlq: DlqRecord[] = [];
    const toDlq = (m: SourceMessage, partition: number, kind: string, reason: string) => {
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
    for (const { partition, messages } of parts) {
      for (const m of messages) {
        // a large chunk decodes for long: let the read API's requests in between (single-node mode)
        const pause = this.ctx.slice();
        if (pause) await pause;
        const position = { topic, partition, offset: BigInt(m.offset) };
        if (!m.value || m.value.length === 0) {
          // a tombstone: a processor that knows deletes turns its key into a value, else it is poison
          if (!this.processor.parseTombstone) {
            toDlq(m, partition, 'empty', 'message has no value');
            continue;
          }
          const parsed = this.processor.parseTombstone(m.key);
          if (!parsed.ok) {
            toDlq(m, partition, 'invalid', `tombstone: ${parsed.reason}`);
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
          toDlq(m, partition, 'undecodable', err.message);
          continue;
        }
        const parsed = this.processor.parse(raw);
        if (!parsed.ok) {
          toDlq(m, partition, 'invalid', parsed.reason);
          continue;
        }
        decoded.push({ value: parsed.value, position, brokerTime: Number(m.timestamp) });
      }
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
        claimed.map((x) => ({
          key: x.key as string,
          position: `${topic}/${x.d.position.partition}/${x.d.position.offset}`,
        })),
      );
      const dup = new Set(claimed.filter((_, k) => !owners[k]).map((x) => x.d));
      kept = decoded.filter((d) => !dup.has(d));
      if (dup.size) streamMetrics.messages.inc({ processor: name, mode: this.mode, outcome: 'duplicate' }, dup.size);
    }

    lap('claims');
    const where = chunkWhere(parts);
    if (dlq.length) {
      await this.deps.dlq.send(dlq);
      this.logger.warn(
        { ...where.fields, count: dlq.length, reason: dlq[0].headers['x-dlq-reason'] },
        'messages sent to the DLQ',
      );
    }

    lap('dlq');
    // keyed state Redis forgot is read back from the ledger as it was before this chunk (runtime/ledger.ts)
    const ledger = this.processor.ledger;
    const before = new Map(parts.map((p) => [p.partition, p.first]));
    const ctx: ProcessContext = ledger
      ? {
          ...this.ctx,
          ledgerRows: (items) => readLedger(this.deps.db, this.ctx.table(ledger.table), ledger, items, before),
        }
      : this.ctx;
    const result = kept.length ? await this.processor.process(kept, ctx) : { writes: [] };
    lap('process');
    const multi = this.processor.tables.written.length > 1;
    for (const w of result.writes) {
      if (w.rows.length === 0) continue;
      const dedupToken = `${token}${multi ? `/${w.table}` : ''}`;
      await this.withRetry(() => this.deps.db.insert(this.ctx.table(w.table), w.rows, { dedupToken }), {
        active,
        where,
        table: w.table,
      });
      streamMetrics.rows.inc({ processor: name, mode: this.mode, table: w.table }, w.rows.length);
      lap(`insert ${w.table}`);
      this.stats.rows.set(w.table, (this.stats.rows.get(w.table) ?? 0) + w.rows.length);
    }
    if (result.afterWrite) await this.withRetry(result.afterWrite, { active, where, table: 'afterWrite' });
    lap('afterWrite');
    streamMetrics.messages.inc({ processor: name, mode: this.mode, outcome: 'written' }, kept.length);
    if (dlq.length) streamMetrics.messages.inc({ processor: name, mode: this.mode, outcome: 'dlq' }, dlq.length);
  }

  /**
   * A write (ClickHouse insert, after-write hook) is retried until it succeeds: a failing engine (down,
   * out of disk, refusing inserts) is never the messages' fault, so nothing is dead-lettered, skipped or
   * committed meanwhile. The partition's consumption waits on this chunk (its batch is not resolved), the
   * consumer keeps its group membership (onFetch's heartbeats), `stream_write_retries_total` counts the attempts,
   * `stream_writes_failing` shows the waiting partitions and `stream_consumer_lag` the backlog (refreshed
   * from the broker while waiting). Back-off doubles from 200 ms to RETRY_MAX_MS. Once the write succeeds
   * the chunk goes on (its already written tables are dropped by their tokens) and the backlog follows.
   * Stop, pause or a revoked partition abandon the chunk uncommitted: it is read again with the same
   * boundaries (journal).
   */
  private async withRetry(fn: () => Promise<void>, what: WriteTarget): Promise<void> {
    const { active, where, table } = what;
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
              ...where.fields,
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
        const abandon = !active();
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
              ...where.fields,
              attempt,
              retryInMs: delay,
            },
            `write to ${table} failed: consumption of ${where.label} paused, nothing committed; retrying until it succeeds`,
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
  /** false once the chunk must be given up (stopping, pausing, a partition revoked) */
  active: () => boolean;
  where: ChunkWhere;
  /** the table written, or `afterWrite` */
  table: string;
}

/** A chunk in the logs: its partition and offsets, or its partitions and id. */
interface ChunkWhere {
  fields: Record<string, unknown>;
  /** `partition 3`, `partitions 0, 3` */
  label: string;
}

function chunkWhere(parts: readonly ChunkPart[]): ChunkWhere {
  if (parts.length === 1) {
    const [p] = parts;
    return {
      fields: { partition: p.partition, first: String(p.first), last: String(p.last) },
      label: `partition ${p.partition}`,
    };
  }
  return {
    fields: { partitions: parts.map((p) => p.partition), chunk: chunkId(parts) },
    label: `partitions ${parts.map((p) => p.partition).join(', ')}`,
  };
}

/** partition batches handled at the same time (one decodes and deduplicates while another writes; chDB
 *  runs one statement at a time) */
const PARTITIONS_IN_PARALLEL = 3;

/** the largest fetch written as one chunk of its partitions (its messages are kept in Redis until committed) */
const ONE_CHUNK_MAX_MESSAGES = 500;
const ONE_CHUNK_MAX_BYTES = 256 * 1024;

/** `fn` over `items`, at most `limit` at a time; settles them all before it rejects with the first error */
async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  const results = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, run));
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
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
