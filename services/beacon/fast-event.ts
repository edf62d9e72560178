// The hot path of the intake: one pass from a parsed beacon event to its framed Avro value, for events
// that are valid as sent. It produces exactly what the reference path produces — `parseEvent` (zod,
// schemas/events.ts) → `enrichEvent` → the codec's avsc encoding — byte for byte, at a fraction of the
// CPU (no zod issue machinery, no intermediate enriched object, the request's server fields encoded once
// per request, Avro written straight into the request's output buffer).
//
// It never decides that an event is invalid: anything it does not accept as it is (a failing field, a
// clamped timestamp, an Avro schema that is not the one it was written for) is a miss, and the caller
// runs the reference path, which gives the answer and the rejection reason. Equivalence is a property
// test over every event type (test/beacon/fast-event.test.ts): whenever the fast path answers, the
// reference path succeeds with the same bytes.
//
// The field checks are the plain functions of schemas/fields.ts, which the zod field types of
// schemas/events.ts wrap: one rule each. What stays written here is the writer's own layout
// (EXPECTED_FIELDS, the per-type field choice), which the property test keeps equal to the zod path.
import type { ServerFields } from '../../schemas/events.ts';
import {
  toCurrency,
  toDecimal,
  toIdString,
  toInt,
  toNumericId,
  toOptionalIdLike,
  toOptionalText,
  toTimestampMs,
  toUlid,
  toUlidOrUuid,
} from '../../schemas/fields.ts';

// ------------------------------------------------------------------------------------------------
// Output buffer

/** A growable byte buffer the values (and keys) of one request are written into. */
export class ByteWriter {
  buf: Buffer;
  pos = 0;
  constructor(capacity = 64 * 1024) {
    // not from Node's shared pool: the underlying ArrayBuffer is transferred to the main thread
    this.buf = Buffer.from(new ArrayBuffer(capacity));
  }
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.from(new ArrayBuffer(Math.max(this.buf.length * 2, this.pos + n)));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
  byte(b: number): void {
    this.ensure(1);
    this.buf[this.pos++] = b;
  }
  /** Avro long/int: zigzag varint (exact for every safe integer) */
  long(n: number): void {
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    let f = n >= 0 ? n * 2 : -n * 2 - 1;
    while (f >= 128) {
      buf[pos++] = (f % 128) | 0x80;
      f = Math.floor(f / 128);
    }
    buf[pos++] = f;
    this.pos = pos;
  }
  /** Avro string: length + UTF-8 (lone surrogates become U+FFFD, as `toWellFormed` then UTF-8) */
  string(s: string): void {
    const n = s.length;
    if (n < 64) {
      // ASCII fast path: one length byte, one byte per character
      this.ensure(n + 1);
      const buf = this.buf;
      const start = this.pos;
      let pos = start + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[pos++] = c;
      }
      if (i === n) {
        buf[start] = n * 2;
        this.pos = pos;
        return;
      }
    }
    const len = Buffer.byteLength(s, 'utf8');
    this.long(len);
    this.ensure(len);
    this.buf.utf8Write(s, this.pos, len);
    this.pos += len;
  }
  /** UTF-8 bytes without a length (record keys) */
  utf8(s: string): void {
    const len = Buffer.byteLength(s, 'utf8');
    this.ensure(len);
    this.buf.utf8Write(s, this.pos, len);
    this.pos += len;
  }
  /** `["null","string"]` */
  nullableString(s: string | null): void {
    if (s === null) this.byte(0);
    else {
      this.byte(2);
      this.string(s);
    }
  }
  /** `["null","int"]` */
  nullableInt(n: number | null): void {
    if (n === null) this.byte(0);
    else {
      this.byte(2);
      this.long(n);
    }
  }
}

declare global {
  interface Buffer {
    utf8Write(s: string, offset: number, length: number): number;
  }
}

// ------------------------------------------------------------------------------------------------
// Field checks: the plain functions of schemas/fields.ts that the zod field types of schemas/events.ts
// wrap, so both paths apply the same rules. `undefined` = not accepted (a miss). Well-formedness
// (lone surrogates → U+FFFD) is applied by the UTF-8 encoding here (same bytes as zod's `toWellFormed`).

function optionalNumericId(raw: unknown): string | null | undefined {
  return raw === undefined || raw === null ? null : toNumericId(raw);
}

function optionalInt(raw: unknown, min: number, max: number): number | null | undefined {
  return raw === undefined || raw === null ? null : toInt(raw, min, max);
}

function optionalDecimal(raw: unknown): string | null | undefined {
  return raw === undefined || raw === null ? null : toDecimal(raw);
}

function optionalCurrency(raw: unknown): string | null | undefined {
  return raw === undefined || raw === null ? null : toCurrency(raw);
}

function optionalEnum(raw: unknown, a: string, b: string): string | null | undefined {
  if (raw === undefined || raw === null) return null;
  return raw === a || raw === b ? raw : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** contextual_data of most types: any JSON object, absent = {} */
function contextJson(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return '{}';
  return isObject(raw) ? JSON.stringify(raw) : undefined;
}

/** a zod looseObject's output: the shape's keys (transformed) first, then the other keys as sent */
function looseJson(raw: Record<string, unknown>, shape: Record<string, unknown>): string {
  const out: Record<string, unknown> = shape;
  for (const k of Object.keys(raw)) if (!Object.hasOwn(shape, k)) out[k] = raw[k];
  return JSON.stringify(out);
}

// ------------------------------------------------------------------------------------------------
// The Avro schema this writer is for: field name → Avro type, in order. The codec's registered schema
// is compared against it at start; any difference disables the fast path (everything goes the reference
// way) rather than writing a value in an outdated layout.

const S = '"string"';
const NS = '["null","string"]';
const NI = '["null","int"]';
const TS = '{"type":"long","logicalType":"timestamp-millis"}';
const B = '"boolean"';
const LINE_ITEMS =
  '{"type":"array","items":{"type":"record","name":"StorefrontEventLineItem","fields":[{"name":"product_id","type":"string"},{"name":"variant_id","type":["null","string"],"default":null},{"name":"quantity","type":"int"},{"name":"price","type":"string"}]}}';
const EXPECTED_FIELDS: [string, string][] = [
  ['event_id', S],
  ['event_type', S],
  ['timestamp', TS],
  ['received_at', TS],
  ['timestamp_clamped', B],
  ['store_id', S],
  ['session_id', S],
  ['customer_id', NS],
  ['device_id', NS],
  ['attribution_token', NS],
  ['shopping_channel', S],
  ['marketing_source', NS],
  ['marketing_medium', NS],
  ['marketing_campaign', NS],
  ['marketing_term', NS],
  ['marketing_content', NS],
  ['product_id', NS],
  ['variant_id', NS],
  ['position', NI],
  ['block_id', NS],
  ['query', NS],
  ['collection_handle', NS],
  ['content_type', NS],
  ['content_id', NS],
  ['content_handle', NS],
  ['banner_id', NS],
  ['rule_id', NS],
  ['banner_type', NS],
  ['banner_mode', NS],
  ['web_position', NI],
  ['mobile_position', NI],
  ['quantity', NI],
  ['price', NS],
  ['currency', NS],
  ['order_id', NS],
  ['total_price', NS],
  ['line_items', LINE_ITEMS],
  ['contextual_data', '{"type":"string","logicalType":"json"}'],
  ['geo_country', NS],
  ['geo_region', NS],
  ['geo_city', NS],
  ['device_type', S],
  ['browser', NS],
  ['os', NS],
  ['is_bot', B],
];

/** the layout of an Avro type with docs/defaults of records dropped, for comparison */
function shape(t: unknown): unknown {
  if (Array.isArray(t)) return t.map(shape);
  if (t === null || typeof t !== 'object') return t;
  const o = t as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) {
    if (k === 'doc' || k === 'namespace' || (k === 'default' && o.type !== undefined && o.name === undefined)) continue;
    out[k] = k === 'fields' ? (o.fields as Record<string, unknown>[]).map((f) => shape(f)) : shape(o[k]);
  }
  return out;
}

/** whether `schema` (the events topic's Avro schema, JSON text or object) is the layout this writer emits */
export function fastPathSupports(schema: string | object): boolean {
  const s = (typeof schema === 'string' ? JSON.parse(schema) : schema) as {
    type?: string;
    fields?: { name: string; type: unknown }[];
  };
  if (s.type !== 'record' || !Array.isArray(s.fields) || s.fields.length !== EXPECTED_FIELDS.length) return false;
  for (let i = 0; i < EXPECTED_FIELDS.length; i++) {
    const f = s.fields[i];
    const [name, type] = EXPECTED_FIELDS[i];
    if (f.name !== name || JSON.stringify(shape(f.type)) !== JSON.stringify(shape(JSON.parse(type)))) return false;
  }
  return true;
}

// ------------------------------------------------------------------------------------------------
// The writer

/** What a request contributes to each of its events, encoded once. */
export interface RequestBlock {
  /** Confluent header + nothing else: magic byte and schema id */
  header: Buffer;
  /** received_at, timestamp_clamped=false, store_id */
  afterTimestamp: Buffer;
  /** shopping_channel when the event names none */
  inferredChannel: Buffer;
  /** geo_country … is_bot */
  tail: Buffer;
  storeId: string;
}

function encoded(write: (w: ByteWriter) => void): Buffer {
  const w = new ByteWriter(256);
  write(w);
  return Buffer.from(w.buf.subarray(0, w.pos));
}

export function requestBlock(schemaId: number, server: ServerFields): RequestBlock {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(schemaId, 1);
  return {
    header,
    afterTimestamp: encoded((w) => {
      w.long(Date.parse(server.received_at));
      w.byte(0);
      w.string(server.store_id);
    }),
    inferredChannel: encoded((w) => w.string(server.inferred_channel)),
    tail: encoded((w) => {
      w.nullableString(server.geo_country);
      w.nullableString(server.geo_region);
      w.nullableString(server.geo_city);
      w.string(server.device_type);
      w.nullableString(server.browser);
      w.nullableString(server.os);
      w.byte(server.is_bot ? 1 : 0);
    }),
    storeId: server.store_id,
  };
}

/** What the caller needs besides the value. */
export interface FastEvent {
  eventId: string;
  sessionId: string;
}

interface LineItem {
  product_id: string;
  variant_id: string | null;
  quantity: number;
  price: string;
}

function lineItems(raw: unknown): LineItem[] | undefined {
  if (!Array.isArray(raw) || raw.length < 1 || raw.length > 250) return undefined;
  const out: LineItem[] = [];
  for (const item of raw) {
    if (!isObject(item)) return undefined;
    const product_id = toNumericId(item.product_id);
    const variant_id = optionalNumericId(item.variant_id);
    const quantity = toInt(item.quantity, 1, 100_000);
    const price = toDecimal(item.price);
    if (product_id === undefined || variant_id === undefined || quantity === undefined || price === undefined)
      return undefined;
    out.push({ product_id, variant_id, quantity, price });
  }
  return out;
}

/**
 * Write the framed Avro value of `raw` (an event object as parsed from the body) enriched with the
 * request's fields at `w.pos`. Returns undefined — with `w.pos` back where it was — when the event is
 * not accepted as sent or its timestamp is later than `latestAllowedMs` (the reference path clamps it).
 */
export function writeFastEvent(
  raw: Record<string, unknown>,
  req: RequestBlock,
  latestAllowedMs: number,
  w: ByteWriter,
): FastEvent | undefined {
  const type = raw.event_type;
  if (typeof type !== 'string') return undefined;

  // common fields
  const eventId = toUlidOrUuid(raw.event_id);
  const ts = toTimestampMs(raw.timestamp);
  const sessionId = toIdString(raw.session_id, 128);
  const customerId = toOptionalIdLike(raw.customer_id, 128);
  const deviceId = toOptionalText(raw.device_id, 128);
  const attribution = toOptionalText(raw.attribution_token, 128);
  const channel = optionalEnum(raw.shopping_channel, 'web', 'app');
  if (
    eventId === undefined ||
    ts === undefined ||
    ts > latestAllowedMs ||
    sessionId === undefined ||
    customerId === undefined ||
    deviceId === undefined ||
    attribution === undefined ||
    channel === undefined
  ) {
    return undefined;
  }
  const ms = toOptionalText(raw.marketing_source === undefined ? raw.utm_source : raw.marketing_source, 255);
  const mm = toOptionalText(raw.marketing_medium === undefined ? raw.utm_medium : raw.marketing_medium, 255);
  const mc = toOptionalText(raw.marketing_campaign === undefined ? raw.utm_campaign : raw.marketing_campaign, 255);
  const mt = toOptionalText(raw.marketing_term === undefined ? raw.utm_term : raw.marketing_term, 255);
  const mx = toOptionalText(raw.marketing_content === undefined ? raw.utm_content : raw.marketing_content, 255);
  if (ms === undefined || mm === undefined || mc === undefined || mt === undefined || mx === undefined)
    return undefined;

  // type-specific fields (null = not part of this type or not sent)
  let productId: string | null | undefined = null;
  let variantId: string | null | undefined = null;
  let position: number | null | undefined = null;
  let blockId: string | null | undefined = null;
  let query: string | null | undefined = null;
  let collectionHandle: string | null | undefined = null;
  let contentType: string | null = null;
  let contentId: string | null | undefined = null;
  let contentHandle: string | null | undefined = null;
  let bannerId: string | null | undefined = null;
  let ruleId: string | null | undefined = null;
  let bannerType: string | null | undefined = null;
  let bannerMode: string | null | undefined = null;
  let webPosition: number | null | undefined = null;
  let mobilePosition: number | null | undefined = null;
  let quantity: number | null | undefined = null;
  let price: string | null | undefined = null;
  let cur: string | null | undefined = null;
  let orderId: string | null | undefined = null;
  let totalPrice: string | null | undefined = null;
  let items: LineItem[] | undefined;
  let context: string | undefined;

  switch (type) {
    case 'product_click':
    case 'product_impression':
    case 'product_hover':
    case 'product_touch':
      productId = toNumericId(raw.product_id);
      variantId = optionalNumericId(raw.variant_id);
      position = toInt(raw.position, 1, 100_000);
      blockId = toOptionalText(raw.block_id, 64);
      if (type === 'product_click') query = toOptionalText(raw.query, 255);
      break;
    case 'product_view':
      productId = toNumericId(raw.product_id);
      variantId = optionalNumericId(raw.variant_id);
      blockId = toOptionalText(raw.block_id, 64);
      break;
    case 'add_to_cart':
      productId = toNumericId(raw.product_id);
      variantId = optionalNumericId(raw.variant_id);
      quantity = raw.quantity === undefined || raw.quantity === null ? 1 : toInt(raw.quantity, 1, 100_000);
      price = optionalDecimal(raw.price);
      cur = optionalCurrency(raw.currency);
      blockId = toOptionalText(raw.block_id, 64);
      break;
    case 'purchase':
      orderId = toOptionalIdLike(raw.order_id, 64);
      cur = toCurrency(raw.currency);
      totalPrice = optionalDecimal(raw.total_price);
      items = lineItems(raw.line_items);
      if (items === undefined) return undefined;
      break;
    case 'block_view':
      blockId = toOptionalText(raw.block_id, 64);
      productId = optionalNumericId(raw.product_id);
      break;
    case 'collection_view':
      collectionHandle = toIdString(raw.collection_handle, 255);
      break;
    case 'content_click':
    case 'content_impression':
    case 'content_view':
      if (type !== 'content_view') position = optionalInt(raw.position, 1, 100_000);
      if (raw.content_type !== 'article' && raw.content_type !== 'page') return undefined;
      contentType = raw.content_type;
      contentId = toNumericId(raw.content_id);
      contentHandle = toOptionalText(raw.content_handle, 255);
      blockId = toOptionalText(raw.block_id, 64);
      break;
    case 'banner_impression':
    case 'banner_click':
      bannerId = toUlid(raw.banner_id);
      ruleId = toOptionalText(raw.rule_id, 64);
      bannerType = toOptionalText(raw.banner_type, 64);
      bannerMode = optionalEnum(raw.banner_mode, 'inject', 'overtake');
      webPosition = optionalInt(raw.web_position, 0, 100_000);
      mobilePosition = optionalInt(raw.mobile_position, 0, 100_000);
      collectionHandle = toOptionalText(raw.collection_handle, 255);
      break;
    case 'search': {
      query = toIdString(raw.query, 255);
      const c = raw.contextual_data;
      if (!isObject(c) || (c.search_source !== 'typed' && c.search_source !== 'autocomplete')) return undefined;
      context = looseJson(c, { search_source: c.search_source });
      break;
    }
    case 'autocomplete':
      query = toOptionalText(raw.query, 255);
      break;
    case 'autocomplete_click': {
      query = toOptionalText(raw.query, 255);
      productId = optionalNumericId(raw.product_id);
      collectionHandle = toOptionalText(raw.collection_handle, 255);
      const c = raw.contextual_data;
      if (!isObject(c) || typeof c.typed_query !== 'string' || c.typed_query.length > 255) return undefined;
      const pos = toInt(c.position, 1, 100_000);
      const source = toIdString(c.selection_source, 64);
      if (pos === undefined || source === undefined) return undefined;
      context = looseJson(c, { typed_query: c.typed_query, position: pos, selection_source: source.toWellFormed() });
      break;
    }
    default:
      return undefined; // unknown type: the reference path names it
  }
  context ??= contextJson(raw.contextual_data);
  if (
    context === undefined ||
    productId === undefined ||
    variantId === undefined ||
    position === undefined ||
    blockId === undefined ||
    query === undefined ||
    collectionHandle === undefined ||
    contentId === undefined ||
    contentHandle === undefined ||
    bannerId === undefined ||
    ruleId === undefined ||
    bannerType === undefined ||
    bannerMode === undefined ||
    webPosition === undefined ||
    mobilePosition === undefined ||
    quantity === undefined ||
    price === undefined ||
    cur === undefined ||
    orderId === undefined ||
    totalPrice === undefined
  ) {
    return undefined;
  }

  // the value, in the schema's field order
  w.bytes(req.header);
  w.string(eventId);
  w.string(type);
  w.long(ts);
  w.bytes(req.afterTimestamp);
  w.string(sessionId);
  w.nullableString(customerId);
  w.nullableString(deviceId);
  w.nullableString(attribution);
  if (channel === null) w.bytes(req.inferredChannel);
  else w.string(channel);
  w.nullableString(ms);
  w.nullableString(mm);
  w.nullableString(mc);
  w.nullableString(mt);
  w.nullableString(mx);
  w.nullableString(productId);
  w.nullableString(variantId);
  w.nullableInt(position);
  w.nullableString(blockId);
  w.nullableString(query);
  w.nullableString(collectionHandle);
  w.nullableString(contentType);
  w.nullableString(contentId);
  w.nullableString(contentHandle);
  w.nullableString(bannerId);
  w.nullableString(ruleId);
  w.nullableString(bannerType);
  w.nullableString(bannerMode);
  w.nullableInt(webPosition);
  w.nullableInt(mobilePosition);
  w.nullableInt(quantity);
  w.nullableString(price);
  w.nullableString(cur);
  w.nullableString(orderId);
  w.nullableString(totalPrice);
  if (items === undefined || items.length === 0) w.byte(0);
  else {
    w.long(items.length);
    for (const it of items) {
      w.string(it.product_id);
      w.nullableString(it.variant_id);
      w.long(it.quantity);
      w.string(it.price);
    }
    w.byte(0);
  }
  w.string(context);
  w.bytes(req.tail);
  return { eventId, sessionId };
}
