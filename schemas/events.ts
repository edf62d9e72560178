// Engagement events: what storefronts send to POST /beacon (one zod schema per `event_type`), and the
// enriched event the beacon writes to `storefront.events.v1` (flat, every field present, server fields
// added). The Avro value schema is generated from `EnrichedEventSchema` (schemas/avro/generate.ts), so the
// zod schema here is the one source of truth for the Kafka contract. Field-name decisions where the
// spec says "not shown": docs/decisions.md.
import { z } from 'zod';
import {
  DECIMAL_RE,
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
} from './fields.ts';

// ------------------------------------------------------------------------------------------------
// Field types shared by the event, request and order contracts. Each accepts what a storefront or a
// platform webhook reasonably sends and normalizes it to the one form that goes to Kafka.

// Each field type is one transform over the raw value (no unions or pipes): validation sits on the
// beacon's hot path (≥ 100k events/s), and a single hand-written check is several times cheaper in zod.

type Ctx = z.core.$RefinementCtx;
function fail(ctx: Ctx, message: string): never {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
}
const wellFormed = (s: string) => (s.isWellFormed() ? s : s.toWellFormed());

/** ULID (normalized to upper case) or UUID (normalized to lower case). */
export const ulidOrUuid = z
  .unknown()
  .transform((raw, ctx) => toUlidOrUuid(raw) ?? fail(ctx, 'expected a ULID or a UUID'));

/** A ULID (normalized to upper case). */
export const ulidString = z.unknown().transform((raw, ctx) => toUlid(raw) ?? fail(ctx, 'expected a ULID'));

/**
 * A short identifier-like string: trimmed, 1..max characters. Lone UTF-16 surrogates (possible through
 * JSON escapes) become U+FFFD, so that what zod returns is exactly what Avro's UTF-8 carries.
 */
export const idString = (max = 128) =>
  z.unknown().transform((raw, ctx) => {
    if (typeof raw !== 'string') return fail(ctx, 'expected a string');
    const v = toIdString(raw, max);
    if (v === undefined)
      return fail(ctx, raw.trim().length === 0 ? 'must not be empty' : `must be at most ${max} characters`);
    return wellFormed(v);
  });

/** An optional string sent as a string, null or omitted (empty = absent); normalized to `string | null`. */
export const optionalText = (max = 255) =>
  z
    .unknown()
    .optional()
    .transform((raw, ctx): string | null => {
      const v = toOptionalText(raw, max);
      if (v === undefined)
        return fail(ctx, typeof raw !== 'string' ? 'expected a string or null' : `must be at most ${max} characters`);
      return v === null ? null : wellFormed(v);
    });

/** An optional id sent as a string or a non-negative integer; normalized to `string | null`. */
export const optionalIdLike = (max = 128) =>
  z
    .unknown()
    .optional()
    .transform((raw, ctx): string | null => {
      const v = toOptionalIdLike(raw, max);
      if (v === undefined)
        return fail(ctx, `expected a string of at most ${max} characters or a non-negative integer id`);
      return v === null ? null : wellFormed(v);
    });

/**
 * Any Date-parseable value (ISO 8601 or another `Date.parse` format, or epoch milliseconds) → ISO 8601
 * UTC with millisecond precision: the one form timestamps take in every contract. Strings without a
 * zone are read as UTC (the server's zone is UTC; `Date.parse` uses the local zone for them).
 */
export const timestamp = z.unknown().transform((raw, ctx) => {
  if (typeof raw !== 'number' && !(typeof raw === 'string' && raw.length <= 64))
    return fail(ctx, 'expected a date string or epoch milliseconds');
  const ms = toTimestampMs(raw);
  if (ms === undefined) return fail(ctx, 'not a parseable date (ISO 8601 or epoch milliseconds, years 1970-9999)');
  return new Date(ms).toISOString();
});

/** An ISO 8601 UTC timestamp with milliseconds, as `timestamp` produces (for values the platform builds). */
export const isoUtc = z.iso.datetime({ precision: 3, offset: false });

const NUMERIC_ID_MESSAGE = 'expected a positive integer id (number, digit string or gid://…)';

/**
 * A numeric platform id (product, variant, article, page): a positive integer, a digit string or a GID
 * (`gid://shopify/Product/123`) → the digits as a string (ids can exceed 2^53 on some platforms).
 */
export const numericId = z.unknown().transform((raw, ctx) => toNumericId(raw) ?? fail(ctx, NUMERIC_ID_MESSAGE));

/** `numericId`, optional: `string | null`. */
export const optionalNumericId = z
  .unknown()
  .optional()
  .transform((raw, ctx): string | null =>
    raw === undefined || raw === null ? null : (toNumericId(raw) ?? fail(ctx, NUMERIC_ID_MESSAGE)),
  );

/** An integer sent as a number or a digit string, within [min, max]. */
export const intLike = (min: number, max: number) =>
  z.unknown().transform((raw, ctx) => toInt(raw, min, max) ?? fail(ctx, `expected an integer from ${min} to ${max}`));

/** `intLike`, optional: `number | null`. */
export const optionalIntLike = (min: number, max: number) =>
  z
    .unknown()
    .optional()
    .transform((raw, ctx): number | null =>
      raw === undefined || raw === null
        ? null
        : (toInt(raw, min, max) ?? fail(ctx, `expected an integer from ${min} to ${max}`)),
    );

const DECIMAL_MESSAGE = 'expected a non-negative decimal amount with at most 6 decimals';

/**
 * Money in major units as a decimal string ("19.99"): numbers are rounded to 6 decimal places, strings
 * must be plain decimals. Strings keep amounts exact on the way to ClickHouse `Decimal` columns.
 */
export const decimal = z.unknown().transform((raw, ctx) => toDecimal(raw) ?? fail(ctx, DECIMAL_MESSAGE));

/** `decimal`, optional: `string | null`. */
export const optionalDecimal = z
  .unknown()
  .optional()
  .transform((raw, ctx): string | null =>
    raw === undefined || raw === null ? null : (toDecimal(raw) ?? fail(ctx, DECIMAL_MESSAGE)),
  );

/** ISO 4217 currency code, normalized to upper case. */
export const currency = z
  .unknown()
  .transform((raw, ctx) => toCurrency(raw) ?? fail(ctx, 'expected an ISO 4217 currency code'));

/** `currency`, optional: `string | null`. */
export const optionalCurrency = z
  .unknown()
  .optional()
  .transform((raw, ctx): string | null =>
    raw === undefined || raw === null ? null : (toCurrency(raw) ?? fail(ctx, 'expected an ISO 4217 currency code')),
  );

/** An optional member of a string enum: `T | null`. */
export const optionalEnum = <const T extends readonly string[]>(values: T) =>
  z
    .unknown()
    .optional()
    .transform((raw, ctx): T[number] | null => {
      if (raw === undefined || raw === null) return null;
      return typeof raw === 'string' && values.includes(raw)
        ? (raw as T[number])
        : fail(ctx, `expected one of: ${values.join(', ')}`);
    });

/** A decimal string as it is stored (output side of `decimal`). */
export const decimalString = z.string().regex(DECIMAL_RE);

export const DEVICE_TYPES = ['mobile', 'tablet', 'desktop', 'bot'] as const;
export type DeviceType = (typeof DEVICE_TYPES)[number];
export const SHOPPING_CHANNELS = ['web', 'app'] as const;
export type ShoppingChannel = (typeof SHOPPING_CHANNELS)[number];

/** A free-form JSON object (contextual data); carried in Avro as a JSON string. */
export const jsonObject = z.record(z.string(), z.unknown());

// ------------------------------------------------------------------------------------------------
// Engagement events as storefronts send them.

export const EVENT_TYPES = [
  'product_click',
  'product_view',
  'product_impression',
  'product_hover',
  'product_touch',
  'add_to_cart',
  'purchase',
  'block_view',
  'collection_view',
  'content_view',
  'content_click',
  'content_impression',
  'banner_impression',
  'banner_click',
  'search',
  'autocomplete',
  'autocomplete_click',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Event types that concern one product (`product_id` required). */
export const PRODUCT_SCOPED_EVENT_TYPES = [
  'product_click',
  'product_view',
  'product_impression',
  'product_hover',
  'product_touch',
  'add_to_cart',
] as const satisfies readonly EventType[];

/** Fields the server adds; a client sending them has them dropped (never trusted). */
export const SERVER_FIELDS = [
  'store_id',
  'received_at',
  'geo_country',
  'geo_region',
  'geo_city',
  'device_type',
  'browser',
  'os',
  'is_bot',
  'timestamp_clamped',
] as const;

const common = {
  event_id: ulidOrUuid,
  timestamp,
  session_id: idString(128),
  customer_id: optionalIdLike(128),
  device_id: optionalText(128),
  attribution_token: optionalText(128),
  shopping_channel: optionalEnum(SHOPPING_CHANNELS),
  marketing_source: optionalText(255),
  marketing_medium: optionalText(255),
  marketing_campaign: optionalText(255),
  marketing_term: optionalText(255),
  marketing_content: optionalText(255),
  contextual_data: z
    .unknown()
    .optional()
    .transform((raw, ctx): Record<string, unknown> => {
      if (raw === undefined || raw === null) return {};
      if (typeof raw === 'object' && !Array.isArray(raw)) return raw as Record<string, unknown>;
      return fail(ctx, 'expected a JSON object');
    }),
};

const position = intLike(1, 100_000);
const gridPosition = optionalIntLike(0, 100_000);
const optionalPosition = optionalIntLike(1, 100_000);
const quantity = intLike(1, 100_000);

const product = { product_id: numericId, variant_id: optionalNumericId };
const ranked = { ...product, position, block_id: optionalText(64) };

const lineItemInput = z.object({
  product_id: numericId,
  variant_id: optionalNumericId,
  quantity,
  price: decimal,
});

const content = {
  content_type: z.enum(['article', 'page']),
  content_id: numericId,
  content_handle: optionalText(255),
  block_id: optionalText(64),
};

const banner = {
  banner_id: ulidString,
  rule_id: optionalText(64),
  banner_type: optionalText(64),
  banner_mode: optionalEnum(['inject', 'overtake']),
  web_position: gridPosition,
  mobile_position: gridPosition,
  collection_handle: optionalText(255),
};

type Common = typeof common;
const ev = <T extends EventType, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ event_type: z.literal(type), ...common, ...shape } as { event_type: z.ZodLiteral<T> } & Omit<
    Common,
    keyof S
  > &
    S);

export const ProductClickEvent = ev('product_click', { ...ranked, query: optionalText(255) });
export const ProductViewEvent = ev('product_view', { ...product, block_id: optionalText(64) });
export const ProductImpressionEvent = ev('product_impression', { ...ranked });
export const ProductHoverEvent = ev('product_hover', { ...ranked });
export const ProductTouchEvent = ev('product_touch', { ...ranked });
export const AddToCartEvent = ev('add_to_cart', {
  ...product,
  quantity: z
    .unknown()
    .optional()
    .transform((raw, ctx) =>
      raw === undefined || raw === null
        ? 1
        : (toInt(raw, 1, 100_000) ?? fail(ctx, 'expected an integer from 1 to 100000')),
    ),
  price: optionalDecimal,
  currency: optionalCurrency,
  block_id: optionalText(64),
});
export const PurchaseEvent = ev('purchase', {
  order_id: optionalIdLike(64),
  currency,
  total_price: optionalDecimal,
  line_items: z.array(lineItemInput).min(1).max(250),
});
export const BlockViewEvent = ev('block_view', { block_id: optionalText(64), product_id: optionalNumericId });
export const CollectionViewEvent = ev('collection_view', { collection_handle: idString(255) });
export const ContentViewEvent = ev('content_view', { ...content });
export const ContentClickEvent = ev('content_click', { ...content, position: optionalPosition });
export const ContentImpressionEvent = ev('content_impression', { ...content, position: optionalPosition });
export const BannerImpressionEvent = ev('banner_impression', { ...banner });
export const BannerClickEvent = ev('banner_click', { ...banner });
export const SearchEvent = ev('search', {
  query: idString(255),
  contextual_data: z.looseObject({ search_source: z.enum(['typed', 'autocomplete']) }),
});
export const AutocompleteEvent = ev('autocomplete', { query: optionalText(255) });
export const AutocompleteClickEvent = ev('autocomplete_click', {
  /** the selected suggestion's text, when it is a query suggestion */
  query: optionalText(255),
  product_id: optionalNumericId,
  collection_handle: optionalText(255),
  contextual_data: z.looseObject({
    typed_query: z.string().max(255),
    position,
    selection_source: idString(64),
  }),
});

/** One schema per event type. */
export const EVENT_SCHEMAS = {
  product_click: ProductClickEvent,
  product_view: ProductViewEvent,
  product_impression: ProductImpressionEvent,
  product_hover: ProductHoverEvent,
  product_touch: ProductTouchEvent,
  add_to_cart: AddToCartEvent,
  purchase: PurchaseEvent,
  block_view: BlockViewEvent,
  collection_view: CollectionViewEvent,
  content_view: ContentViewEvent,
  content_click: ContentClickEvent,
  content_impression: ContentImpressionEvent,
  banner_impression: BannerImpressionEvent,
  banner_click: BannerClickEvent,
  search: SearchEvent,
  autocomplete: AutocompleteEvent,
  autocomplete_click: AutocompleteClickEvent,
} as const satisfies Record<EventType, z.ZodType>;

/** Every engagement event, discriminated by `event_type`. */
export const EngagementEventSchema = z.discriminatedUnion('event_type', [
  ProductClickEvent,
  ProductViewEvent,
  ProductImpressionEvent,
  ProductHoverEvent,
  ProductTouchEvent,
  AddToCartEvent,
  PurchaseEvent,
  BlockViewEvent,
  CollectionViewEvent,
  ContentViewEvent,
  ContentClickEvent,
  ContentImpressionEvent,
  BannerImpressionEvent,
  BannerClickEvent,
  SearchEvent,
  AutocompleteEvent,
  AutocompleteClickEvent,
]);
/** A validated, normalized engagement event (client fields only). */
export type EngagementEvent = z.output<typeof EngagementEventSchema>;
/** What a client may send. */
export type EngagementEventInput = z.input<typeof EngagementEventSchema>;

/** The body of POST /beacon: 1..100 events (each validated separately with `parseEvent`). */
export const BeaconBatchSchema = z.object({ events: z.array(z.unknown()).min(1).max(100) });
export const MAX_BATCH_EVENTS = 100;

export type RejectCode = 'not_an_object' | 'unknown_event_type' | 'missing_field' | 'invalid_field';
export type ParseEventResult =
  | { ok: true; event: EngagementEvent }
  | { ok: false; code: RejectCode; reason: string; path: string; event_type: string | null };

// `utm_*` are accepted as aliases of `marketing_*` (the spec calls them "UTM source, medium, campaign").
const UTM_ALIASES = [
  ['utm_source', 'marketing_source'],
  ['utm_medium', 'marketing_medium'],
  ['utm_campaign', 'marketing_campaign'],
  ['utm_term', 'marketing_term'],
  ['utm_content', 'marketing_content'],
] as const;

/**
 * Validate one event from a beacon batch against the schema its `event_type` selects. On failure the
 * result names the first offending field path (dot-separated, e.g. `contextual_data.typed_query`) and
 * whether it was missing or invalid. Server-enriched fields a client sent are dropped.
 */
export function parseEvent(raw: unknown): ParseEventResult {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { ok: false, code: 'not_an_object', reason: 'an event must be a JSON object', path: '', event_type: null };
  }
  let obj = raw as Record<string, unknown>;
  const type = obj.event_type;
  if (type === undefined || type === null) {
    return {
      ok: false,
      code: 'missing_field',
      reason: 'missing required field event_type',
      path: 'event_type',
      event_type: null,
    };
  }
  const schema =
    typeof type === 'string' && Object.hasOwn(EVENT_SCHEMAS, type) ? EVENT_SCHEMAS[type as EventType] : undefined;
  if (!schema) {
    const shown = typeof type === 'string' ? type.slice(0, 64) : typeof type;
    return {
      ok: false,
      code: 'unknown_event_type',
      reason: `unknown event_type ${JSON.stringify(shown)}; supported: ${EVENT_TYPES.join(', ')}`,
      path: 'event_type',
      event_type: typeof type === 'string' ? type.slice(0, 64) : null,
    };
  }
  for (const [alias, field] of UTM_ALIASES) {
    if (obj[alias] !== undefined && obj[field] === undefined) obj = { ...obj, [field]: obj[alias] };
  }
  const r = schema.safeParse(obj);
  if (r.success) return { ok: true, event: r.data as EngagementEvent };
  const issue = r.error.issues[0];
  const path = issue.path.map(String).join('.');
  const missing = valueAt(obj, issue.path) === undefined;
  return missing
    ? { ok: false, code: 'missing_field', reason: `missing required field ${path}`, path, event_type: type as string }
    : { ok: false, code: 'invalid_field', reason: `${path}: ${issue.message}`, path, event_type: type as string };
}

function valueAt(obj: unknown, path: readonly PropertyKey[]): unknown {
  let cur = obj;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

// ------------------------------------------------------------------------------------------------
// The enriched event: the value of `storefront.events.v1`. Flat (one Avro record for every type, so
// sinks write one wide table), every field present; fields that do not apply to a type are null.

const LineItemSchema = z
  .object({
    product_id: z.string().describe('numeric product id as a string'),
    variant_id: z.string().nullable().describe('numeric variant id as a string'),
    quantity: z.int32().min(1),
    price: decimalString.describe('unit price in major units, decimal string'),
  })
  .meta({ id: 'StorefrontEventLineItem' });
export type LineItem = z.infer<typeof LineItemSchema>;

export const EnrichedEventSchema = z.object({
  event_id: z.string().describe('client-generated ULID (upper case) or UUID (lower case); the deduplication key'),
  event_type: z.enum(EVENT_TYPES).describe('engagement event type'),
  timestamp: isoUtc.describe('when the event happened (client clock, clamped when implausible), UTC'),
  received_at: isoUtc.describe('when the beacon received the event, UTC'),
  timestamp_clamped: z.boolean().describe('true when the client timestamp was replaced by the server'),
  store_id: z.string().describe('store the access token belongs to'),
  session_id: z.string(),
  customer_id: z.string().nullable().describe('null for guests'),
  device_id: z.string().nullable().describe('persistent device id, when the client sends one'),
  attribution_token: z.string().nullable().describe('request id of the search/browse/blocks response that led here'),
  shopping_channel: z.enum(SHOPPING_CHANNELS).describe('as sent, else inferred from User-Agent / X-Requested-With'),
  marketing_source: z.string().nullable(),
  marketing_medium: z.string().nullable(),
  marketing_campaign: z.string().nullable(),
  marketing_term: z.string().nullable(),
  marketing_content: z.string().nullable(),
  product_id: z.string().nullable(),
  variant_id: z.string().nullable(),
  position: z.int32().nullable().describe('1-indexed result position'),
  block_id: z.string().nullable(),
  query: z.string().nullable().describe('search query (search), typed text (autocomplete) or selected suggestion'),
  collection_handle: z.string().nullable(),
  content_type: z.enum(['article', 'page']).nullable(),
  content_id: z.string().nullable(),
  content_handle: z.string().nullable(),
  banner_id: z.string().nullable(),
  rule_id: z.string().nullable(),
  banner_type: z.string().nullable(),
  banner_mode: z.enum(['inject', 'overtake']).nullable(),
  web_position: z.int32().nullable(),
  mobile_position: z.int32().nullable(),
  quantity: z.int32().nullable(),
  price: decimalString.nullable().describe('unit price (add_to_cart), decimal string in major units'),
  currency: z.string().nullable(),
  order_id: z.string().nullable(),
  total_price: decimalString.nullable().describe('order total (purchase), decimal string in major units'),
  line_items: z.array(LineItemSchema).describe('purchase line items; empty for other types'),
  contextual_data: jsonObject.describe('free-form client context (JSON object)'),
  geo_country: z.string().nullable().describe('ISO 3166-1 alpha-2 from the client IP'),
  geo_region: z.string().nullable().describe('region/state code from the client IP'),
  geo_city: z.string().nullable().describe('city from the client IP, lower case'),
  device_type: z.enum(DEVICE_TYPES),
  browser: z.string().nullable(),
  os: z.string().nullable(),
  is_bot: z.boolean(),
});
export type EnrichedEvent = z.infer<typeof EnrichedEventSchema>;

/** What the beacon knows about the request an event came in. */
export interface ServerFields {
  store_id: string;
  /** ISO 8601 UTC */
  received_at: string;
  geo_country: string | null;
  geo_region: string | null;
  geo_city: string | null;
  device_type: DeviceType;
  browser: string | null;
  os: string | null;
  is_bot: boolean;
  /** channel inferred from User-Agent / X-Requested-With, used when the client sent none */
  inferred_channel: ShoppingChannel;
  /** replaces the client timestamp when the beacon clamps it (sets timestamp_clamped) */
  clamped_timestamp?: string;
}

/** Every optional event field, unset (the base every enriched event is built on). */
export const EMPTY_EVENT_FIELDS: Omit<
  EnrichedEvent,
  | keyof ServerFields
  | 'event_id'
  | 'event_type'
  | 'timestamp'
  | 'session_id'
  | 'shopping_channel'
  | 'contextual_data'
  | 'timestamp_clamped'
> = {
  customer_id: null,
  device_id: null,
  attribution_token: null,
  marketing_source: null,
  marketing_medium: null,
  marketing_campaign: null,
  marketing_term: null,
  marketing_content: null,
  product_id: null,
  variant_id: null,
  position: null,
  block_id: null,
  query: null,
  collection_handle: null,
  content_type: null,
  content_id: null,
  content_handle: null,
  banner_id: null,
  rule_id: null,
  banner_type: null,
  banner_mode: null,
  web_position: null,
  mobile_position: null,
  quantity: null,
  price: null,
  currency: null,
  order_id: null,
  total_price: null,
  line_items: [],
};

/** Build the Kafka value from a validated event and the server's view of its request. */
export function enrichEvent(event: EngagementEvent, server: ServerFields): EnrichedEvent {
  const { inferred_channel, clamped_timestamp, ...serverFields } = server;
  return {
    ...EMPTY_EVENT_FIELDS,
    ...event,
    ...serverFields,
    timestamp: clamped_timestamp ?? event.timestamp,
    timestamp_clamped: clamped_timestamp !== undefined && clamped_timestamp !== event.timestamp,
    shopping_channel: event.shopping_channel ?? inferred_channel,
  };
}

/**
 * A beacon event dropped by validation: the value of `storefront.events.rejected.v1`, kept so that
 * integrators can see why their events did not count.
 */
export const RejectedEventSchema = z.object({
  store_id: z.string(),
  received_at: isoUtc,
  code: z.enum(['not_an_object', 'unknown_event_type', 'missing_field', 'invalid_field']),
  reason: z.string().describe('human-readable reason'),
  path: z.string().describe('dot-separated path of the offending field; empty for the whole event'),
  event_type: z.string().nullable(),
  raw_json: z.string().describe('the event as received (JSON), truncated to 16 KiB'),
});
export type RejectedEvent = z.infer<typeof RejectedEventSchema>;

/** Build the rejected-event value from a failed `parseEvent`. */
export function rejectedEvent(
  raw: unknown,
  failure: Extract<ParseEventResult, { ok: false }>,
  server: { store_id: string; received_at: string },
): RejectedEvent {
  let json: string;
  try {
    json = JSON.stringify(raw) ?? 'null';
  } catch {
    json = '"<unserializable>"';
  }
  return {
    store_id: server.store_id,
    received_at: server.received_at,
    code: failure.code,
    reason: failure.reason,
    path: failure.path,
    event_type: failure.event_type,
    raw_json: json.length > 16_384 ? json.slice(0, 16_384) : json,
  };
}
