// The kafkajs internal-module swaps, in one place. kafkajs 2.2.4 does per-record work in JavaScript that
// this adapter replaces by registering drop-ins under kafkajs' private module ids (require.cache) or by
// replacing a prototype method. Each swap holds only if it is installed before kafkajs loads the module,
// so this module installs every one of them when it is evaluated, and the adapter (client.ts, and
// services/common/kafka/index.ts) imports it before it imports kafkajs. Nothing outside
// services/common/kafka/ imports kafkajs, so the order cannot be broken by an import elsewhere.
//
// Every swap falls back to kafkajs' own code when its module moved or was loaded first; `swapStatus()`
// says which hold, `reportSwaps()` logs it once per process and the gauge `kafkajs_swap_active{swap}`
// exports it (test/foundation/kafkajs-swaps.test.ts fails when one falls back).
import { kafkajsGroupingIsLinear } from './grouping.ts'; // first: registers itself before anything loads kafkajs' producer
import { kafkajsSendIsPerPartition } from './send-messages.ts'; // likewise: kafkajs' send with a per-partition retry
import { createRequire } from 'node:module';
import { isMainThread } from 'node:worker_threads';
import { crc32c } from '@node-rs/crc32';
import type { Logger } from '../../logger.ts';
import {
  fastRecordBatch,
  fastRecordDecoder,
  fastRecordEncoder,
  type RecordBatchInput,
  type RecordInput,
} from './record.ts';

const require = createRequire(import.meta.url);

/**
 * kafkajs computes the record-batch CRC-32C of every produce request in JavaScript (a table loop over every
 * byte: ≈ 6 % of an intake worker's time). kafkajs 2.2.4 loads its record-batch encoder lazily and takes
 * the checksum function from `protocol/recordBatch/crc32C`; registering the native implementation
 * (@node-rs/crc32, the one the broker verifies with) under that module id before the first produce swaps it
 * in. Same function, same values: the broker rejects a batch whose CRC does not match, so every produce in
 * the test suite checks it. If kafkajs already loaded the encoder, or its layout changed, nothing is
 * swapped and the JavaScript CRC stays.
 */
function useNativeCrc32c(): void {
  if (nativeCrc32cTried) return;
  nativeCrc32cTried = true;
  let id: string;
  try {
    id = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');
  } catch {
    return;
  }
  if (require.cache[id]) return;
  const encoder = require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js');
  if (require.cache[encoder]) return;
  require.cache[id] = {
    id,
    filename: id,
    loaded: true,
    exports: nativeCrc32c,
    children: [],
    paths: [],
  } as unknown as NodeJS.Module;
}
let nativeCrc32cTried = false;

/** Whether kafkajs' record-batch encoder computes its CRC-32C natively (see useNativeCrc32c). */
export function kafkajsCrc32cIsNative(): boolean {
  const id = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');
  return require.cache[id]?.exports === nativeCrc32c;
}
const nativeCrc32c = (buffer: Buffer): number => crc32c(buffer) >>> 0;

/**
 * kafkajs encodes every produced record through a fresh zero-filled Encoder, a Buffer per varint and Long
 * arithmetic, and copies each batch three times (kafkajs-record.ts); the produce request (v3) takes its
 * encoders from `protocol/recordBatch/record/v0` and `protocol/recordBatch/v0`, loaded lazily on the first
 * produce. Replacing them before then puts the exact-size encoders in front (kafkajs' own ones still handle
 * the inputs the fast ones leave). Same bytes: tested against kafkajs' encoders, and the broker verifies
 * every batch's CRC.
 */
function useFastRecordEncoder(): void {
  if (fastRecordTried) return;
  fastRecordTried = true;
  let id: string;
  let produce: string;
  try {
    id = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js');
    produce = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js');
  } catch {
    return;
  }
  if (require.cache[produce]) return;
  const original = require(id) as (input: RecordInput) => unknown;
  const cached = require.cache[id];
  if (cached) cached.exports = fastRecordEncoder(original);
  // the batch module's exports object is shared with the fetch decoder (MAGIC_BYTE): replace the one function
  const batch = require('kafkajs/src/protocol/recordBatch/v0/index.js') as {
    RecordBatch: (input: RecordBatchInput) => Promise<unknown>;
  };
  batch.RecordBatch = fastRecordBatch(batch.RecordBatch);
}
let fastRecordTried = false;

/** Whether kafkajs' produce request encodes records and batches with kafkajs-record.ts (see useFastRecordEncoder). */
export function kafkajsRecordEncoderIsFast(): boolean {
  const record = require.cache[require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js')]?.exports as
    | { fastRecordEncoder?: true }
    | undefined;
  const batch = require.cache[require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js')]?.exports as
    | { RecordBatch?: { fastRecordBatch?: true } }
    | undefined;
  return record?.fastRecordEncoder === true && batch?.RecordBatch?.fastRecordBatch === true;
}

/**
 * On the consuming side kafkajs decodes every fetched record with 64-bit `Long` arithmetic (kafkajs-record.ts,
 * fastRecordDecoder); its record-batch decoder takes the record decoder from `protocol/recordBatch/record/v0/decoder`
 * when it first loads (on the first fetch). Replaced before then, like the encoders; same results, tested
 * against kafkajs' decoder.
 */
function useFastRecordDecoder(): void {
  if (fastDecoderTried) return;
  fastDecoderTried = true;
  let id: string;
  let batchDecoder: string;
  try {
    id = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/decoder.js');
    batchDecoder = require.resolve('kafkajs/src/protocol/recordBatch/v0/decoder.js');
  } catch {
    return;
  }
  if (require.cache[batchDecoder]) return;
  const original = require(id) as Parameters<typeof fastRecordDecoder>[0];
  const header = require('kafkajs/src/protocol/recordBatch/header/v0/decoder.js') as Parameters<
    typeof fastRecordDecoder
  >[1];
  const cached = require.cache[id];
  if (cached) cached.exports = fastRecordDecoder(original, header);
}
let fastDecoderTried = false;

/** Whether kafkajs' fetch responses decode records with kafkajs-record.ts (see useFastRecordDecoder). */
export function kafkajsRecordDecoderIsFast(): boolean {
  const id = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/decoder.js');
  return (require.cache[id]?.exports as { fastRecordDecoder?: true } | undefined)?.fastRecordDecoder === true;
}

/**
 * kafkajs 2.2.4's request queue re-arms its pending-requests check after every check, even with nothing
 * pending and no throttling, and then with a negative delay that Node turns into 1 ms: every broker
 * connection of every client polls a thousand times a second for as long as it is open (kafkajs issues
 * #1556, #1704, #1751; Node ≥ 24 also warns about the negative delay). In this app that is dozens of
 * connections (producers, each processor's consumer, admin, the workers' producers) waking the event loop
 * and the kernel tens of thousands of times a second. The check is scheduled here only when a request is
 * pending (after the throttle, or kafkajs' 10 ms interval) or while the broker throttles; otherwise
 * nothing is armed, and kafkajs still checks the queue when a request is pushed and whenever an in-flight
 * request completes. A prototype method swap, so it holds for every connection of the process.
 */
const CHECK_PENDING_REQUESTS_INTERVAL = 10;
interface RequestQueueLike {
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  pending: unknown[];
  checkPendingRequests(): void;
}
function scheduleCheckPendingRequests(this: RequestQueueLike): void {
  if (this.throttleCheckTimeoutId) return;
  let scheduleAt = this.throttledUntil - Date.now();
  if (this.pending.length > 0) scheduleAt = scheduleAt > 0 ? scheduleAt : CHECK_PENDING_REQUESTS_INTERVAL;
  else if (scheduleAt <= 0) return;
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, scheduleAt);
}

function stopIdlePolling(): void {
  if (idlePollingStopped) return;
  idlePollingStopped = true;
  try {
    const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
      prototype: { scheduleCheckPendingRequests: unknown };
    };
    RequestQueue.prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  } catch {
    // kafkajs moved the module: its own scheduling stays
  }
}
let idlePollingStopped = false;

/** Whether kafkajs' request queues schedule their checks with the function above (see stopIdlePolling). */
export function kafkajsIdlePollingStopped(): boolean {
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
    prototype: { scheduleCheckPendingRequests: unknown };
  };
  return RequestQueue.prototype.scheduleCheckPendingRequests === scheduleCheckPendingRequests;
}

/**
 * A consumer's fetch waits at the broker for `minBytes` or its linger (STREAMS_LINGER_MS: 100 ms), which is
 * what batches a busy topic; on an idle topic the same fetch returns empty after the linger, so every idle
 * consumer polled its broker ten times a second forever. The stack's dozen consumers (one per processor,
 * the store directory's, the registry's) spent ≈ 10 % of a core doing that with no traffic at all.
 * A consumer group registered with `setIdleFetchWait` now long-polls once its previous fetch from a broker
 * came back empty: that broker's next fetch waits up to the idle wait for any byte (minBytes 1), so it
 * answers as soon as the first message is appended, and the fetch after a non-empty one lingers as
 * before. Busy topics batch exactly as they did; an idle one costs one fetch per idle wait. The price:
 * kafkajs notices a rebalance (through the heartbeat after a fetch) and finishes `stop()` (it waits for
 * the fetch in flight) up to the idle wait later. A prototype method swap of kafkajs' ConsumerGroup: the
 * fetch runs on a view of the group whose `maxWaitTime` and `minBytes` are the idle ones (kafkajs 2.2.4's
 * fetch and the methods it calls only read the group's fields), so concurrent fetches from several
 * brokers each see their own.
 */
const idleFetchWaits = new Map<string, number>();

/** Long-poll idle fetches of consumer group `groupId` for up to `ms` (undefined: never; see above). Consumers
 *  of one group in one thread share the setting (they are one processor's members, configured alike). */
export function setIdleFetchWait(groupId: string, ms: number | undefined): void {
  if (ms === undefined || ms <= 0) idleFetchWaits.delete(groupId);
  else idleFetchWaits.set(groupId, ms);
}

const IDLE_NODES = Symbol('idleNodes');
interface ConsumerGroupLike {
  groupId: string;
  maxWaitTime: number;
  minBytes: number;
  [IDLE_NODES]?: Set<number>;
}
interface FetchedBatch {
  isEmptyIncludingFiltered(): boolean;
  isEmpty(): boolean;
  [FETCH_SIBLINGS]?: readonly object[];
}
type GroupFetch = ((this: ConsumerGroupLike, nodeId: number) => Promise<FetchedBatch[]>) & {
  longPollsWhenIdle?: true;
};

/**
 * The non-empty batches of one fetch response, as the fetch returned them. kafkajs hands its batches to
 * `eachBatch` one call per partition and keeps no link between the calls of one fetch; the same fetch
 * swap below marks each non-empty batch with the array of its siblings, so the adapter can give them to
 * a handler together (ConsumerClient.startFetches). Undefined when the swap fell back.
 */
export function fetchSiblings(batch: object): readonly object[] | undefined {
  return (batch as FetchedBatch)[FETCH_SIBLINGS];
}
const FETCH_SIBLINGS = Symbol('fetchSiblings');

function longPollWhenIdle(): void {
  if (longPollTried) return;
  longPollTried = true;
  try {
    const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup.js') as { prototype: { fetch: GroupFetch } };
    const original = ConsumerGroup.prototype.fetch;
    if (typeof original !== 'function' || original.longPollsWhenIdle) return;
    const fetch: GroupFetch = async function (this: ConsumerGroupLike, nodeId: number) {
      const wait = idleFetchWaits.get(this.groupId);
      const idle = wait !== undefined && wait > this.maxWaitTime && this[IDLE_NODES]?.has(nodeId) === true;
      const group = idle ? Object.create(this, { maxWaitTime: { value: wait }, minBytes: { value: 1 } }) : this;
      const batches = await original.call(group, nodeId);
      const nodes = (this[IDLE_NODES] ??= new Set());
      if (batches.every((b) => b.isEmptyIncludingFiltered())) nodes.add(nodeId);
      else nodes.delete(nodeId);
      // kafkajs calls eachBatch only for batches with messages (runner.js handleBatch)
      const live = batches.filter((b) => !b.isEmpty());
      for (const b of live) b[FETCH_SIBLINGS] = live;
      return batches;
    };
    fetch.longPollsWhenIdle = true;
    ConsumerGroup.prototype.fetch = fetch;
  } catch {
    // kafkajs moved the module: every fetch lingers as configured
  }
}
let longPollTried = false;

/** Whether kafkajs' consumer groups long-poll when idle (see longPollWhenIdle). */
export function kafkajsLongPollsWhenIdle(): boolean {
  const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup.js') as { prototype: { fetch: GroupFetch } };
  return ConsumerGroup.prototype.fetch.longPollsWhenIdle === true;
}

/** The swaps, by name. */
export const SWAPS = {
  /** linear groupMessagesPerPartition (grouping.ts) */
  grouping: kafkajsGroupingIsLinear,
  /** native CRC-32C of produced record batches */
  crc32c: kafkajsCrc32cIsNative,
  /** exact-size record and record-batch encoders (record.ts) */
  record_encoder: kafkajsRecordEncoderIsFast,
  /** Long-free record decoder (record.ts) */
  record_decoder: kafkajsRecordDecoderIsFast,
  /** request queues arm no timer while idle */
  idle_polling: kafkajsIdlePollingStopped,
  /** a retried send re-sends every partition without a response to its current leader (send-messages.ts) */
  send_retry: kafkajsSendIsPerPartition,
  /** an idle consumer's next fetch long-polls (setIdleFetchWait); the same swap marks a fetch's batches
   *  with their siblings (fetchSiblings) */
  idle_fetch: kafkajsLongPollsWhenIdle,
} as const;
export type SwapName = keyof typeof SWAPS;

/** Which swaps hold in this process (true = ours, false = kafkajs' own code). */
export function swapStatus(): Record<SwapName, boolean> {
  const out = {} as Record<SwapName, boolean>;
  for (const [name, holds] of Object.entries(SWAPS)) {
    try {
      out[name as SwapName] = holds();
    } catch {
      out[name as SwapName] = false;
    }
  }
  return out;
}

let reported = false;

/** Once per process: one info line naming the swaps that hold (a warning when one fell back), and the gauge. */
export function reportSwaps(logger: Logger): void {
  const status = swapStatus();
  // the gauge lives in the main thread's registry (/metrics); a worker thread does not load prom-client for it
  if (isMainThread) {
    void import('../../metrics.ts').then(({ gauge }) => {
      const g = gauge(
        'kafkajs_swap_active',
        "Whether a kafkajs internal-module swap holds (1) or fell back to kafkajs' own code (0)",
        ['swap'],
      );
      for (const [swap, holds] of Object.entries(status)) g.set({ swap }, holds ? 1 : 0);
    });
  }
  if (reported) return;
  reported = true;
  const fellBack = Object.entries(status)
    .filter(([, holds]) => !holds)
    .map(([swap]) => swap);
  // worker threads load their own copy of kafkajs: they say something only when a swap fell back there
  if (fellBack.length === 0) {
    if (isMainThread) logger.info({ kafkajsSwaps: status }, 'kafkajs swaps active');
  } else logger.warn({ kafkajsSwaps: status, fellBack }, "kafkajs swaps: some fell back to kafkajs' own code");
}

stopIdlePolling();
useNativeCrc32c();
useFastRecordEncoder();
useFastRecordDecoder();
// last: the consumer group module loads more of kafkajs, after the swaps above checked what was loaded
longPollWhenIdle();
