// The CPU-bound part of POST /beacon, as one pure function: body text → batch-shape check → per-event
// validation (schemas/events.ts) → enrichment with the request's server fields → Avro values. It runs
// inline or in a worker thread (prepare-pool.ts), so the intake can use more than one core; everything
// with I/O (auth, Redis, Kafka, the HTTP reply) stays on the main thread.
import sjson from 'secure-json-parse';
import {
  type EnrichedEvent,
  enrichEvent,
  MAX_BATCH_EVENTS,
  type ParseEventResult,
  parseEvent,
  rejectedEvent,
  type ServerFields,
} from '../../schemas/events.ts';
import { ByteWriter, requestBlock, writeFastEvent } from './fast-event.ts';
import { keyHash } from '../common/kafka/murmur2.ts';
import type { QueuedRecord } from './produce-queue.ts';

/** the part of the Avro value codec (services/common/kafka/codec.ts) the intake uses */
export interface ValueEncoder {
  encode(topic: string, value: unknown): Buffer;
}

export interface FieldError {
  path: string;
  message: string;
}

export interface Rejection {
  /** position of the event in the request's `events` array */
  index: number;
  code: string;
  reason: string;
  /** dot-separated path of the offending field; empty for the whole event */
  path: string;
}

export interface PrepareInput {
  /** the request body as received */
  text: string;
  server: ServerFields;
  receivedMs: number;
}

export interface PrepareSettings {
  topics: { events: string; rejected: string };
  maxClockSkewMs: number;
  /**
   * schema id of the events topic's value schema when it is the layout the fast path writes
   * (fast-event.ts `fastPathSupports`); absent: every event takes the reference path
   */
  fastSchemaId?: number;
}

export interface PreparedEvent {
  eventId: string;
  /** record key: store_id + session_id (UTF-8) */
  key: Buffer;
  /** murmur2 hash of the key, for the partitioner (murmur2.ts) */
  keyHash: number;
  value: Buffer;
}

export type PrepareResult =
  | { ok: false; message: string; fields: FieldError[] }
  | {
      ok: true;
      /** valid events, first occurrence of each event_id, in request order */
      events: PreparedEvent[];
      /** values for the rejected-events topic */
      rejectedValues: Buffer[];
      rejections: Rejection[];
      /** events repeated inside the batch (same event_id), stored once */
      batchDuplicates: number;
      /** timestamps clamped to the receive time */
      clamped: number;
      /** events that took the reference (zod) path although valid: not accepted as sent by the fast path */
      slow: number;
    };

/** The top-level shape: `{ "events": [ 1..100 items ] }`; every failure is a 422 naming the path. */
function checkBatch(
  text: string,
): { ok: true; events: unknown[] } | { ok: false; message: string; fields: FieldError[] } {
  if (text.length === 0)
    return {
      ok: false,
      message: 'The body is empty.',
      fields: [{ path: '', message: 'expected a JSON object { "events": [...] }' }],
    };
  let v: unknown;
  try {
    // prototype-poisoning keys (__proto__, constructor.prototype) are removed, not honoured
    v = sjson.parse(text, null, { protoAction: 'remove', constructorAction: 'remove' });
  } catch (err) {
    return {
      ok: false,
      message: 'The body is not valid JSON.',
      fields: [{ path: '', message: (err as Error).message }],
    };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    return {
      ok: false,
      message: 'The body must be a JSON object { "events": [...] }.',
      fields: [{ path: '', message: 'expected an object' }],
    };
  }
  const events = (v as Record<string, unknown>).events;
  if (events === undefined || events === null) {
    return { ok: false, message: 'events is required.', fields: [{ path: 'events', message: 'required' }] };
  }
  if (!Array.isArray(events)) {
    return {
      ok: false,
      message: 'events must be an array.',
      fields: [{ path: 'events', message: 'expected an array of events' }],
    };
  }
  if (events.length === 0 || events.length > MAX_BATCH_EVENTS) {
    return {
      ok: false,
      message: `A batch holds 1 to ${MAX_BATCH_EVENTS} events; got ${events.length}.`,
      fields: [{ path: 'events', message: `expected 1 to ${MAX_BATCH_EVENTS} events, got ${events.length}` }],
    };
  }
  return { ok: true, events };
}

type OkResult = Extract<PrepareResult, { ok: true }>;

/**
 * A prepared batch as the plugin uses it: the event ids to ask Redis about, and `produce`, which sends
 * the events not flagged as duplicates plus the rejected-event values to Kafka and resolves once Kafka
 * acknowledged them (rejects with ProduceUnavailableError otherwise). The values themselves live where
 * they were encoded (a producing worker) or here.
 */
export type Prepared =
  | Extract<PrepareResult, { ok: false }>
  | (Omit<OkResult, 'events' | 'rejectedValues'> & {
      /** valid events' ids, first occurrence of each, in request order */
      eventIds: string[];
      produce(duplicate?: readonly boolean[]): Promise<void>;
    });

/** the records of a prepared batch, without the events flagged as duplicates */
export function batchRecords(
  result: OkResult,
  storeId: string,
  topics: PrepareSettings['topics'],
  duplicate?: ArrayLike<boolean | number>,
): QueuedRecord[] {
  const records: QueuedRecord[] = [];
  for (let i = 0; i < result.events.length; i++) {
    if (duplicate?.[i]) continue;
    const e = result.events[i];
    records.push({ topic: topics.events, key: e.key, value: e.value, keyHash: e.keyHash });
  }
  for (const value of result.rejectedValues) records.push({ topic: topics.rejected, key: storeId, value });
  return records;
}

/** a prepared batch whose values are here, produced through `send` (a produce queue) */
export function holdHere(
  result: PrepareResult,
  storeId: string,
  topics: PrepareSettings['topics'],
  send: (records: QueuedRecord[]) => Promise<void>,
): Prepared {
  if (!result.ok) return result;
  const { events, rejectedValues, ...rest } = result;
  return {
    ...rest,
    eventIds: events.map((e) => e.eventId),
    produce: (duplicate) => send(batchRecords(result, storeId, topics, duplicate)),
  };
}

/** positions in the request's output buffer, turned into Buffers once everything is written */
interface Span {
  eventId: string;
  keyOff: number;
  keyLen: number;
  keyHash: number;
  valueOff: number;
  valueLen: number;
}

/** Body → validated, enriched, Avro-encoded events: every value and key in one buffer (`w`). */
export function prepareBatch(
  input: PrepareInput,
  settings: PrepareSettings,
  codec: ValueEncoder,
  w = new ByteWriter(),
): PrepareResult {
  const batch = checkBatch(input.text);
  if (!batch.ok) return batch;
  const { server } = input;
  const { topics } = settings;
  const latestAllowed = input.receivedMs + settings.maxClockSkewMs;
  const block = settings.fastSchemaId !== undefined ? requestBlock(settings.fastSchemaId, server) : undefined;
  const keyPrefix = Buffer.from(`${server.store_id}:`);

  const rejections: Rejection[] = [];
  const rejectedSpans: [number, number][] = [];
  const spans: Span[] = [];
  const seen = new Set<string>();
  let batchDuplicates = 0;
  let clamped = 0;
  let slow = 0;
  const reject = (index: number, raw: unknown, failure: Extract<ParseEventResult, { ok: false }>) => {
    rejections.push({ index, code: failure.code, reason: failure.reason, path: failure.path });
    try {
      const value = codec.encode(topics.rejected, rejectedEvent(raw, failure, server));
      rejectedSpans.push([w.pos, value.length]);
      w.bytes(value);
    } catch {
      // counted in the response and metrics; the raw event could not even be framed for the topic
    }
  };
  const addKey = (eventId: string, sessionId: string, valueOff: number) => {
    const valueLen = w.pos - valueOff;
    const keyOff = w.pos;
    w.bytes(keyPrefix);
    w.utf8(sessionId);
    const keyLen = w.pos - keyOff;
    spans.push({ eventId, keyOff, keyLen, keyHash: keyHash(w.buf, keyOff, keyLen), valueOff, valueLen });
  };

  for (let i = 0; i < batch.events.length; i++) {
    const raw = batch.events[i];
    // fast path: valid as sent, written straight as Avro
    if (block && raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
      const start = w.pos;
      const fast = writeFastEvent(raw as Record<string, unknown>, block, latestAllowed, w);
      if (fast) {
        if (seen.has(fast.eventId)) {
          w.pos = start; // the same event twice in one batch: stored once
          batchDuplicates++;
        } else {
          seen.add(fast.eventId);
          addKey(fast.eventId, fast.sessionId, start);
        }
        continue;
      }
      w.pos = start;
    }
    // reference path: zod validation (and the rejection reason), enrichment, avsc
    const parsed = parseEvent(raw);
    if (!parsed.ok) {
      reject(i, raw, parsed);
      continue;
    }
    const event = parsed.event;
    if (seen.has(event.event_id)) {
      batchDuplicates++; // the same event twice in one batch: stored once
      continue;
    }
    let enriched: EnrichedEvent;
    if (Date.parse(event.timestamp) > latestAllowed) {
      enriched = enrichEvent(event, { ...server, clamped_timestamp: server.received_at });
      clamped++;
    } else {
      enriched = enrichEvent(event, server);
    }
    let value: Buffer;
    try {
      value = codec.encode(topics.events, enriched);
    } catch (err) {
      reject(i, raw, {
        ok: false,
        code: 'invalid_field',
        reason: `not encodable: ${(err as Error).message}`,
        path: '',
        event_type: event.event_type,
      });
      continue;
    }
    slow++;
    seen.add(event.event_id);
    const valueOff = w.pos;
    w.bytes(value);
    addKey(event.event_id, event.session_id, valueOff);
  }
  const buf = w.buf;
  return {
    ok: true,
    events: spans.map((s) => ({
      eventId: s.eventId,
      key: buf.subarray(s.keyOff, s.keyOff + s.keyLen),
      keyHash: s.keyHash,
      value: buf.subarray(s.valueOff, s.valueOff + s.valueLen),
    })),
    rejectedValues: rejectedSpans.map(([off, len]) => buf.subarray(off, off + len)),
    rejections,
    batchDuplicates,
    clamped,
    slow,
  };
}
