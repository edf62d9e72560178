// Fetch with long polling: reads whole stored batches (no copy: the chunks are spliced into the
// response), and when fewer than minBytes are available waits up to maxWaitMs for an append to any
// of the requested partitions.
import type { FetchPartitionResponse, FetchRequest, FetchResponse } from '../protocol/apis/fetch.ts';
import { ErrorCode } from '../protocol/errors.ts';
import type { Handler } from '../server.ts';
import type { PartitionStore } from '../storage/api.ts';
import type { BrokerState } from './state.ts';

interface Wanted {
  out: FetchPartitionResponse;
  store: PartitionStore | undefined;
  fetchOffset: bigint;
  maxBytes: number;
}

export function fetchHandler(state: BrokerState): Handler<FetchRequest, FetchResponse> {
  return async (ctx, req) => {
    const deadline = Date.now() + Math.max(0, req.maxWaitMs);
    const topics: FetchResponse['topics'] = [];
    const wanted: Wanted[] = [];
    for (const t of req.topics) {
      const partitions: FetchPartitionResponse[] = [];
      topics.push({ name: t.name, partitions });
      for (const p of t.partitions) {
        const out: FetchPartitionResponse = {
          index: p.index,
          errorCode: 0,
          highWatermark: -1n,
          logStartOffset: -1n,
          chunks: [],
          bytes: 0,
        };
        partitions.push(out);
        wanted.push({
          out,
          store: state.store.partition(t.name, p.index),
          fetchOffset: p.fetchOffset,
          maxBytes: p.maxBytes,
        });
      }
    }
    const budget = Math.min(req.maxBytes > 0 ? req.maxBytes : 0x7fffffff, state.fetchMaxResponseBytes);
    const minBytes = Math.max(1, req.minBytes);
    for (;;) {
      const { bytes, errors } = await readAll(wanted, budget);
      const remaining = deadline - Date.now();
      if (bytes >= minBytes || errors || remaining <= 0 || ctx.signal.aborted) break;
      if (!(await waitForAppend(wanted, remaining, ctx.signal))) {
        // timed out: answer with whatever is there now
        await readAll(wanted, budget);
        break;
      }
    }
    return { errorCode: 0, sessionId: 0, topics };
  };
}

async function readAll(wanted: Wanted[], budget: number): Promise<{ bytes: number; errors: boolean }> {
  let total = 0;
  let errors = false;
  for (const w of wanted) {
    const { out, store } = w;
    out.chunks = [];
    out.bytes = 0;
    if (!store) {
      out.errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
      errors = true;
      continue;
    }
    const hw = store.highWatermark();
    const start = store.logStartOffset();
    out.highWatermark = hw;
    out.logStartOffset = start;
    out.errorCode = 0;
    if (w.fetchOffset === hw) continue;
    if (w.fetchOffset > hw || w.fetchOffset < start) {
      out.errorCode = ErrorCode.OFFSET_OUT_OF_RANGE;
      errors = true;
      continue;
    }
    const left = budget - total;
    // KIP-74: only the first partition with data may exceed the limits (by one batch)
    if (left <= 0 && total > 0) continue;
    const res = await store.read(w.fetchOffset, Math.max(1, Math.min(w.maxBytes, left)));
    out.highWatermark = res.highWatermark;
    out.logStartOffset = res.logStartOffset;
    if (res.errorCode !== 0) {
      out.errorCode = res.errorCode;
      errors = true;
      continue;
    }
    if (total > 0 && res.bytes > left) continue;
    out.chunks = res.chunks;
    out.bytes = res.bytes;
    total += res.bytes;
  }
  return { bytes: total, errors };
}

/** resolves true on the first append to any wanted partition, false on timeout or abort */
function waitForAppend(wanted: Wanted[], timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const unsubs: (() => void)[] = [];
    let settled = false;
    const finish = (v: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      for (const u of unsubs) u();
      resolve(v);
    };
    const onAbort = () => finish(false);
    const timer = setTimeout(() => finish(false), timeoutMs);
    signal.addEventListener('abort', onAbort);
    const seen = new Set<PartitionStore>();
    for (const w of wanted) {
      if (!w.store || seen.has(w.store)) continue;
      seen.add(w.store);
      unsubs.push(w.store.onAppend(() => finish(true)));
    }
    // an append may have landed between the read and the subscription
    for (const w of wanted) {
      if (w.store && w.out.errorCode === 0 && w.store.highWatermark() !== w.out.highWatermark) finish(true);
    }
  });
}
