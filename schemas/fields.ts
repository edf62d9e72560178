// The small rules every contract shares, each written once as a plain function: global ids (GIDs),
// numeric platform ids, integers, decimal money strings, timestamps, ULID/UUID, store ids and the query
// normalization that keys every trending aggregate and curation. The zod schemas of schemas/*.ts wrap
// these functions; the beacon's fast path (services/beacon/fast-event.ts) calls them directly, so the
// two paths cannot drift. A function returns `undefined` for a value it does not accept; the zod
// wrappers turn that into an issue with a message.
//
// No zod and no import of ours here: this file sits on the beacon's hot path.

// ------------------------------------------------------------------------------------------------
// Global ids: `gid://<platform>/<Resource>/<id>[?<params>]` (docs/decisions.md, "One GID rule").
// platform: letters, digits, `_` and `-` (`shopify`, `shopify-b2b`); Resource: letters (`Product`,
// `CompanyLocation`); id: one or more characters other than `/`, `?` and whitespace; optional
// `?params` (Shopify appends some to a few GIDs) are ignored.

const GID_PLATFORM = '[A-Za-z0-9_-]+';
const GID_RESOURCE = '[A-Za-z]+';
const GID_PARAMS = '(?:\\?\\S*)?';
/** a numeric id inside a GID: 1-20 digits, not all zeros (0 is not an id) */
const GID_DIGITS = '(?!0+(?!\\d))\\d{1,20}';
const GID_RE = new RegExp(`^gid://(${GID_PLATFORM})/(${GID_RESOURCE})/([^/?\\s]+)${GID_PARAMS}$`);
/** a GID whose id is numeric (1-20 digits): resource and digits captured, in one regex (hot path) */
const NUMERIC_GID_RE = new RegExp(`^gid://${GID_PLATFORM}/(${GID_RESOURCE})/(${GID_DIGITS})${GID_PARAMS}$`);
const DIGITS_RE = /^\d{1,20}$/;

export interface Gid {
  platform: string;
  resource: string;
  id: string;
}

/** `gid://<platform>/<Resource>/<id>` → its parts; anything else → undefined. No trimming. */
export function parseGid(value: string): Gid | undefined {
  const m = GID_RE.exec(value);
  return m ? { platform: m[1], resource: m[2], id: m[3] } : undefined;
}

/** The pattern (no anchors) of a GID of `resource` with a numeric id, for composite patterns. */
export function numericGidPattern(resource: string): string {
  if (!new RegExp(`^${GID_RESOURCE}$`).test(resource)) throw new Error(`not a GID resource name: ${resource}`);
  return `gid://${GID_PLATFORM}/${resource}/${GID_DIGITS}${GID_PARAMS}`;
}

/** A GID of `resource` with a numeric id, as an anchored regex (zod `.regex`, so OpenAPI shows the pattern). */
export function numericGidRegex(resource: string): RegExp {
  return new RegExp(`^${numericGidPattern(resource)}$`);
}

/**
 * A numeric platform id (product, variant, customer, market, …): a positive safe integer, a digit string
 * or a GID with a numeric id (of `resource`, when given) → its digits without leading zeros (a string:
 * ids can exceed 2^53). Strings are trimmed. 0 is not an id.
 */
export function toNumericId(raw: unknown, resource?: string): string | undefined {
  if (typeof raw === 'number') return Number.isSafeInteger(raw) && raw > 0 ? String(raw) : undefined;
  if (typeof raw !== 'string') return undefined;
  const v = raw.trim();
  let digits: string;
  if (DIGITS_RE.test(v)) digits = v;
  else {
    const m = NUMERIC_GID_RE.exec(v);
    if (m === null || (resource !== undefined && m[1] !== resource)) return undefined;
    digits = m[2];
  }
  const stripped = digits.replace(/^0+/, '');
  return stripped === '' ? undefined : stripped;
}

/** The largest value of a ClickHouse UInt64 id column. */
export const UINT64_MAX = 18446744073709551615n;

// ------------------------------------------------------------------------------------------------
// Integers, money, currencies

const INT_STRING_RE = /^\s*-?\d{1,10}\s*$/;

/** An integer sent as a number or a digit string (surrounding blanks allowed), within [min, max]. */
export function toInt(raw: unknown, min: number, max: number): number | undefined {
  const n =
    typeof raw === 'number' ? raw : typeof raw === 'string' && INT_STRING_RE.test(raw) ? Number(raw) : Number.NaN;
  return Number.isInteger(n) && n >= min && n <= max ? n : undefined;
}

/** A decimal amount as stored: up to 15 integer digits and 6 decimals, non-negative. */
export const DECIMAL_RE = /^\d{1,15}(\.\d{1,6})?$/;

/**
 * Money in major units → a decimal string ("19.99"): numbers are rounded to 6 decimal places, strings
 * must be plain decimals (trimmed). Strings keep amounts exact on the way to ClickHouse `Decimal` columns.
 */
export function toDecimal(raw: unknown): string | undefined {
  if (typeof raw === 'number')
    return Number.isFinite(raw) && raw >= 0 && raw < 1e15 ? String(Number(raw.toFixed(6))) : undefined;
  if (typeof raw === 'string') {
    const v = raw.trim();
    return DECIMAL_RE.test(v) ? v : undefined;
  }
  return undefined;
}

const CURRENCY_RE = /^[A-Za-z]{3}$/;
/** ISO 4217 currency code (trimmed) → upper case. */
export function toCurrency(raw: unknown): string | undefined {
  const v = typeof raw === 'string' ? raw.trim() : '';
  return CURRENCY_RE.test(v) ? v.toUpperCase() : undefined;
}

// ------------------------------------------------------------------------------------------------
// Timestamps

/** 9999-12-31T23:59:59.999Z */
export const MAX_TIME_MS = 253402300799999;
/** ISO 8601 date-time without a zone designator (read as UTC, not the server's local zone) */
const LOCAL_ISO_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,9})?)?$/;

/**
 * Any Date-parseable value (ISO 8601 or another `Date.parse` format, or epoch milliseconds) → epoch
 * milliseconds (truncated), years 1970-9999. Strings without a zone are read as UTC.
 */
export function toTimestampMs(raw: unknown): number | undefined {
  let ms: number;
  if (typeof raw === 'number') ms = raw;
  else if (typeof raw === 'string' && raw.length <= 64) {
    ms = toIsoStringMs(raw);
    if (Number.isNaN(ms)) {
      const v = raw.trim();
      ms = Date.parse(LOCAL_ISO_RE.test(v) ? `${v}Z` : v);
    }
  } else return undefined;
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_TIME_MS) return undefined;
  return Math.trunc(ms);
}

/** the `n` decimal digits of `v` at `at` as a number; -1 when one is not a digit */
function digitsAt(v: string, at: number, n: number): number {
  let x = 0;
  for (let i = at; i < at + n; i++) {
    const d = v.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    x = x * 10 + d;
  }
  return x;
}

/**
 * `Date.parse` of what `Date.prototype.toISOString` writes (`YYYY-MM-DDTHH:MM:SS.sssZ`, years 1970-9999,
 * fields in their plain ranges); NaN for anything else, which `toTimestampMs` then gives `Date.parse`.
 * Nearly every event's timestamp has this shape, and this is ≈ 10× cheaper than `Date.parse` (the
 * beacon's workers spent ≈ 0.7 µs per event there). Equal to `Date.parse` wherever it answers (tested).
 */
export function toIsoStringMs(v: string): number {
  if (
    v.length !== 24 ||
    v.charCodeAt(4) !== 45 || // -
    v.charCodeAt(7) !== 45 ||
    v.charCodeAt(10) !== 84 || // T
    v.charCodeAt(13) !== 58 || // :
    v.charCodeAt(16) !== 58 ||
    v.charCodeAt(19) !== 46 || // .
    v.charCodeAt(23) !== 90 // Z
  ) {
    return Number.NaN;
  }
  const year = digitsAt(v, 0, 4);
  const month = digitsAt(v, 5, 2);
  const day = digitsAt(v, 8, 2);
  const hour = digitsAt(v, 11, 2);
  const minute = digitsAt(v, 14, 2);
  const second = digitsAt(v, 17, 2);
  const milli = digitsAt(v, 20, 3);
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > 31) return Number.NaN;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || milli < 0) return Number.NaN;
  // day 29-31 of a shorter month rolls over into the next, as Date.parse does
  return Date.UTC(year, month - 1, day, hour, minute, second, milli);
}

/** `00`..`99` and `000`..`999`: the seconds' and milliseconds' digits of isoFromMs */
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
/** the last minute isoFromMs formatted: its first millisecond and `YYYY-MM-DDTHH:MM:` */
let isoMinute = Number.NaN;
let isoMinutePrefix = '';
/** 9999-12-31T23:59:59.999Z + 1: from here on toISOString writes six-digit years */
const ISO_FOUR_DIGIT_YEARS_END = 253_402_300_800_000;

/**
 * `new Date(ms).toISOString()`, the same string, without a Date per call: the minute's prefix is kept and
 * only the seconds and milliseconds are written, so consecutive timestamps of a stream (Avro's
 * timestamp-millis, decoded for every message a processor reads) mostly cost two table lookups. Anything
 * outside years 1970-9999 or not a whole millisecond goes to toISOString (and its RangeError). Equal to it
 * for every value (tested).
 */
export function isoFromMs(ms: number): string {
  if (!(ms >= 0 && ms < ISO_FOUR_DIGIT_YEARS_END) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  let r = ms - isoMinute;
  if (!(r >= 0 && r < 60_000)) {
    r = ms % 60_000;
    isoMinute = ms - r;
    isoMinutePrefix = new Date(isoMinute).toISOString().slice(0, 17);
  }
  return `${isoMinutePrefix}${TWO_DIGITS[Math.floor(r / 1000)]}.${THREE_DIGITS[r % 1000]}Z`;
}

// ------------------------------------------------------------------------------------------------
// ULID / UUID, short texts

/** a ULID as stored: upper case Crockford base32 */
export const ULID_RE = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const ULID_ANY_CASE_RE = /^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}$/;
const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A ULID (any case, trimmed) → upper case. */
export function toUlid(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const v = raw.trim();
  return ULID_ANY_CASE_RE.test(v) ? v.toUpperCase() : undefined;
}

/** A ULID (→ upper case) or a UUID (→ lower case), trimmed. */
export function toUlidOrUuid(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const v = raw.trim();
  if (ULID_ANY_CASE_RE.test(v)) return v.toUpperCase();
  if (UUID_RE.test(v)) return v.toLowerCase();
  return undefined;
}

/** A required short string: trimmed, 1..max UTF-16 units. */
export function toIdString(raw: unknown, max: number): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const v = raw.trim();
  return v.length === 0 || v.length > max ? undefined : v;
}

/** An optional string (string, null or omitted; empty = absent), trimmed, at most max units. */
export function toOptionalText(raw: unknown, max: number): string | null | undefined {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'string') return undefined;
  const v = raw.trim();
  if (v.length > max) return undefined;
  return v === '' ? null : v;
}

/** An optional id sent as a string (trimmed, at most max units; empty = absent) or a non-negative safe integer. */
export function toOptionalIdLike(raw: unknown, max: number): string | null | undefined {
  if (raw === undefined || raw === null) return null;
  if (typeof raw === 'number') return Number.isSafeInteger(raw) && raw >= 0 ? String(raw) : undefined;
  if (typeof raw === 'string') {
    const v = raw.trim();
    if (v.length <= max) return v === '' ? null : v;
  }
  return undefined;
}

// ------------------------------------------------------------------------------------------------
// Store ids

/** the pattern of a store id (without anchors), for composite patterns such as record keys */
export const STORE_ID_PATTERN = '[A-Za-z0-9_-]{1,64}';
/** store ids: a ULID by default; operators may choose a readable slug (e.g. `demo`) */
export const STORE_ID_RE = new RegExp(`^${STORE_ID_PATTERN}$`);
export const STORE_ID_MESSAGE = 'expected 1-64 characters of A-Z a-z 0-9 _ -';
export function isStoreId(value: string): boolean {
  return STORE_ID_RE.test(value);
}

// ------------------------------------------------------------------------------------------------
// Query normalization

const PRINTABLE_ASCII_RE = /^[\x20-\x7E]*$/;

/**
 * The normalized query: NFKC-folded, lower case, trimmed, inner whitespace collapsed to one space. It is
 * the key of every trending aggregate (requests_raw.query, events_raw.query of `search` events), of
 * term-keyed configuration (redirects, synonyms, curation, ranking rules) and of autocomplete matching.
 */
export function normalizeQuery(q: string): string {
  // NFKC is the identity on printable ASCII (the common case on the autocomplete path)
  const folded = PRINTABLE_ASCII_RE.test(q) ? q : q.normalize('NFKC');
  return folded.toLowerCase().trim().replace(/\s+/g, ' ');
}

/** `normalizeQuery` for an optional query: null, undefined and a blank query → null. */
export function normalizeOptionalQuery(q: string | null | undefined): string | null {
  if (q === null || q === undefined) return null;
  const n = normalizeQuery(q);
  return n === '' ? null : n;
}
