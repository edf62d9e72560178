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

/** the part of the Avro value codec (schemas/codec.ts) the intake uses */
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
}

export interface PreparedEvent {
  eventId: string;
  /** record key: store_id + session_id */
  key: string;
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
    };

/** The top-level shape: `{ "events": [ 1..100 items ] }`; every failure is a 422 naming the path. */
function checkBatch(text: string): { ok: true; events: unknown[] } | { ok: false; message: string; fields: FieldError[] } {
  if (text.length === 0) return { ok: false, message: 'The body is empty.', fields: [{ path: '', message: 'expected a JSON object { "events": [...] }' }] };
  let v: unknown;
  try {
    // prototype-poisoning keys (__proto__, constructor.prototype) are removed, not honoured
    v = sjson.parse(text, null, { protoAction: 'remove', constructorAction: 'remove' });
  } catch (err) {
    return { ok: false, message: 'The body is not valid JSON.', fields: [{ path: '', message: (err as Error).message }] };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    return { ok: false, message: 'The body must be a JSON object { "events": [...] }.', fields: [{ path: '', message: 'expected an object' }] };
  }
  const events = (v as Record<string, unknown>).events;
  if (events === undefined || events === null) {
    return { ok: false, message: 'events is required.', fields: [{ path: 'events', message: 'required' }] };
  }
  if (!Array.isArray(events)) {
    return { ok: false, message: 'events must be an array.', fields: [{ path: 'events', message: 'expected an array of events' }] };
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

export function prepareBatch(input: PrepareInput, settings: PrepareSettings, codec: ValueEncoder): PrepareResult {
  const batch = checkBatch(input.text);
  if (!batch.ok) return batch;
  const { server } = input;
  const { topics } = settings;
  const latestAllowed = input.receivedMs + settings.maxClockSkewMs;

  const rejections: Rejection[] = [];
  const rejectedValues: Buffer[] = [];
  const events: PreparedEvent[] = [];
  const seen = new Set<string>();
  let batchDuplicates = 0;
  let clamped = 0;
  const reject = (index: number, raw: unknown, failure: Extract<ParseEventResult, { ok: false }>) => {
    rejections.push({ index, code: failure.code, reason: failure.reason, path: failure.path });
    try {
      rejectedValues.push(codec.encode(topics.rejected, rejectedEvent(raw, failure, server)));
    } catch {
      // counted in the response and metrics; the raw event could not even be framed for the topic
    }
  };
  for (let i = 0; i < batch.events.length; i++) {
    const raw = batch.events[i];
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
      reject(i, raw, { ok: false, code: 'invalid_field', reason: `not encodable: ${(err as Error).message}`, path: '', event_type: event.event_type });
      continue;
    }
    seen.add(event.event_id);
    events.push({ eventId: event.event_id, key: `${server.store_id}:${event.session_id}`, value });
  }
  return { ok: true, events, rejectedValues, rejections, batchDuplicates, clamped };
}
