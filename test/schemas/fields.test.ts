// The shared field rules (schemas/fields.ts) and the contracts that wrap them: one GID rule, one numeric
// id rule, one store-id rule and one query normalization wherever a contract or a reader applies them.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { productIds } from '../../clickhouse/queries/common.ts';
import { CatalogStoreId } from '../../schemas/catalog.ts';
import { gidNumericId, normalizeTerm, SearchRuleAction, StoreId, validateConfig } from '../../schemas/config.ts';
import { parseEvent } from '../../schemas/events.ts';
import {
  isStoreId,
  normalizeOptionalQuery,
  normalizeQuery,
  numericGidRegex,
  parseGid,
  toDecimal,
  toInt,
  toNumericId,
  isoFromMs,
  toIsoStringMs,
  toTimestampMs,
} from '../../schemas/fields.ts';
import { IdentitySchema, MarketRefSchema } from '../../schemas/storefront.ts';
import { normalizeQuery as autocompleteNormalize, sanitizeQuery } from '../../services/storefront/autocomplete/text.ts';
import { normalizeGid } from '../../services/storefront/context.ts';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);

const platform = fc.stringMatching(/^[A-Za-z0-9_-]{1,16}$/);
const resource = fc.stringMatching(/^[A-Za-z]{1,16}$/);
const digits = fc.stringMatching(/^\d{1,20}$/);

describe('GIDs: one rule for config, events, catalog and the storefront', () => {
  it('parses gid://<platform>/<Resource>/<id>, with any platform of letters, digits, _ and -', () => {
    expect(parseGid('gid://shopify-b2b/Product/1')).toEqual({ platform: 'shopify-b2b', resource: 'Product', id: '1' });
    expect(parseGid('gid://shopify/PriceList/wholesale?x=1')).toEqual({
      platform: 'shopify',
      resource: 'PriceList',
      id: 'wholesale',
    });
    for (const bad of ['gid://shop ify/Product/1', 'gid://shopify/Product/', 'gid://shopify/Pro_duct/1', 'gid:/x/Y/1'])
      expect(parseGid(bad), bad).toBeUndefined();
  });

  it('gives every reader the same digits for the same GID (numeric id without leading zeros)', () => {
    fc.assert(
      fc.property(platform, resource, digits, (p, r, d) => {
        const gid = `gid://${p}/${r}/${d}`;
        const expected = d.replace(/^0+/, '') || undefined;
        expect(toNumericId(gid)).toBe(expected);
        expect(toNumericId(gid, r)).toBe(expected);
        expect(toNumericId(`${gid}?v=1`, r)).toBe(expected);
        expect(toNumericId(d)).toBe(expected);
        expect(gidNumericId(gid, r)).toBe(expected);
        expect(normalizeGid(gid, r)).toBe(expected ?? null);
        expect(numericGidRegex(r).test(gid)).toBe(expected !== undefined);
        expect(toNumericId(gid, `${r}X`)).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it('accepts gid://shopify-b2b/Product/1 in store config, in a beacon event and in a storefront request alike', () => {
    const gid = 'gid://shopify-b2b/Product/1';
    expect(SearchRuleAction.safeParse({ type: 'pin_products', product_ids: [gid] }).success).toBe(true);
    expect(SearchRuleAction.safeParse({ type: 'pin_products', product_ids: ['gid://shopify/Variant/1'] }).success).toBe(
      false,
    );
    const location = validateConfig('b2b_company_location', {
      gid: 'gid://shopify-b2b/CompanyLocation/5',
      company_id: 'gid://shopify-b2b/Company/7',
      catalog_id: 'b2b',
    });
    expect(location.ok && location.value.company_id).toBe('7');
    const event = parseEvent({
      event_type: 'product_view',
      event_id: '01J00000000000000000000000',
      timestamp: 1_700_000_000_000,
      session_id: 's',
      product_id: gid,
    });
    expect(event.ok && event.event.event_type === 'product_view' && event.event.product_id).toBe('1');
    expect(
      IdentitySchema.safeParse({ companyLocationId: 'gid://shopify-b2b/CompanyLocation/5', customerId: 'c' }).success,
    ).toBe(true);
    expect(MarketRefSchema.safeParse('gid://shopify-b2b/Market/5').success).toBe(true);
    expect(productIds([gid, 'gid://shopify/Product/0001', 'nope', '0'])).toEqual(['1']);
  });
});

describe('numbers, money, timestamps', () => {
  it('reads integers from numbers and digit strings within bounds', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 1000 }), (n) => {
        const expected = n >= 0 && n <= 500 ? n : undefined;
        expect(toInt(n, 0, 500)).toBe(expected);
        expect(toInt(` ${n} `, 0, 500)).toBe(expected);
      }),
      { numRuns: RUNS },
    );
    expect(toInt('1.5', 0, 5)).toBeUndefined();
    expect(toInt(1.5, 0, 5)).toBeUndefined();
  });

  it('keeps decimal strings exact and rounds numbers to 6 decimals', () => {
    expect(toDecimal(' 19.99 ')).toBe('19.99');
    expect(toDecimal(19.1234567)).toBe('19.123457');
    expect(toDecimal('-1')).toBeUndefined();
    expect(toDecimal('1e3')).toBeUndefined();
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 0, max: 99 }), (a, b) => {
        const s = `${a}.${String(b).padStart(2, '0')}`;
        expect(toDecimal(s)).toBe(s);
      }),
      { numRuns: RUNS },
    );
  });

  it('reads timestamps without a zone as UTC and bounds them to years 1970-9999', () => {
    expect(toTimestampMs('2026-01-02T03:04:05')).toBe(Date.parse('2026-01-02T03:04:05Z'));
    expect(toTimestampMs('2026-01-02T03:04:05+01:00')).toBe(Date.parse('2026-01-02T02:04:05Z'));
    expect(toTimestampMs(-1)).toBeUndefined();
    expect(toTimestampMs('10000-01-01T00:00:00Z')).toBeUndefined();
    expect(toTimestampMs(1.9)).toBe(1);
  });

  it("reads toISOString's own shape without Date.parse, to the same millisecond wherever it answers", () => {
    const two = (lo: number, hi: number) => fc.integer({ min: lo, max: hi }).map((n) => String(n).padStart(2, '0'));
    const iso = fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0')),
        two(0, 13),
        two(0, 32),
        two(0, 25),
        two(0, 61),
        two(0, 61),
        fc.integer({ min: 0, max: 999 }).map((n) => String(n).padStart(3, '0')),
      )
      .map(([y, mo, d, h, mi, s, ms]) => `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`);
    // any character of the shape replaced: the fast path declines or agrees
    const mutated = fc
      .tuple(iso, fc.nat({ max: 23 }), fc.constantFrom(' ', 'x', '+', '9', '-', ':', 'Z', '.'))
      .map(([v, at, c]) => v.slice(0, at) + c + v.slice(at + 1));
    fc.assert(
      fc.property(
        fc.oneof(
          iso,
          mutated,
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        ),
        (v) => {
          const fast = toIsoStringMs(v);
          if (Number.isNaN(fast)) return; // toTimestampMs goes the Date.parse way, as before
          expect(fast, v).toBe(Date.parse(v));
          expect(toTimestampMs(v), v).toBe(fast <= 253402300799999 ? fast : undefined);
        },
      ),
      { numRuns: RUNS * 10 },
    );
    // the shape toISOString writes for every date in range is taken by the fast path
    for (const ms of [0, Date.UTC(2024, 1, 29, 23, 59, 59, 999), 253402300799999]) {
      expect(toIsoStringMs(new Date(ms).toISOString())).toBe(ms);
    }
    expect(toIsoStringMs('2023-02-30T00:00:00.000Z')).toBe(Date.parse('2023-02-30T00:00:00.000Z')); // rolls over
    expect(toIsoStringMs(' 2026-01-02T03:04:05.000Z')).toBeNaN(); // not the shape: Date.parse decides
  });

  it('writes every timestamp as toISOString does, whatever order the timestamps come in', () => {
    const toIso = (ms: number) => {
      try {
        return new Date(ms).toISOString();
      } catch (err) {
        return (err as Error).name;
      }
    };
    const fast = (ms: number) => {
      try {
        return isoFromMs(ms);
      } catch (err) {
        return (err as Error).name;
      }
    };
    const END = 253_402_300_800_000; // the first millisecond toISOString writes with a six-digit year
    const ms = fc.oneof(
      fc.integer({ min: 0, max: END - 1 }),
      fc.integer({ min: -8.64e15, max: 8.64e15 }),
      fc.constantFrom(0, -1, 59_999, 60_000, END - 1, END, 8.64e15, 8.64e15 + 1, 1.5, -0.5, Number.NaN, Infinity),
      fc.double(),
    );
    // a stream's timestamps: runs within a minute, steps across minute boundaries and back
    const run = fc
      .tuple(
        fc.integer({ min: 0, max: END - 200_000 }),
        fc.array(fc.integer({ min: -70_000, max: 70_000 }), { maxLength: 30 }),
      )
      .map(([start, steps]) => {
        const xs = [start];
        for (const d of steps) xs.push(xs[xs.length - 1] + d);
        return xs;
      });
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            ms.map((v) => [v]),
            run,
          ),
          { maxLength: 8 },
        ),
        (groups) => {
          for (const v of groups.flat()) expect(fast(v), String(v)).toBe(toIso(v));
        },
      ),
      { numRuns: RUNS * 10 },
    );
    expect(isoFromMs(Date.UTC(2024, 1, 29, 23, 59, 59, 999))).toBe('2024-02-29T23:59:59.999Z');
    expect(isoFromMs(Date.UTC(2024, 2, 1, 0, 0, 0, 0))).toBe('2024-03-01T00:00:00.000Z');
  });
});

describe('store ids', () => {
  it('one rule for the directory, the catalog and the webhooks', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 70 }), (s) => {
        const ok = isStoreId(s);
        expect(StoreId.safeParse(s).success).toBe(ok);
        expect(CatalogStoreId.safeParse(s).success).toBe(ok);
      }),
      { numRuns: RUNS },
    );
    expect(isStoreId('demo')).toBe(true);
    expect(isStoreId('a'.repeat(65))).toBe(false);
  });
});

describe('query normalization', () => {
  const queryText = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.constantFrom('  Red   DRESS ', 'ＲＥＤ\u3000dress', 'Straße', 'ﬁne\tshoes\n', 'İstanbul'),
  );

  it('folds NFKC, lower-cases, trims and collapses whitespace; applying it twice changes nothing', () => {
    expect(normalizeQuery('  Red   DRESS ')).toBe('red dress');
    expect(normalizeQuery('ＲＥＤ\u3000dress')).toBe('red dress');
    expect(normalizeOptionalQuery('   ')).toBeNull();
    expect(normalizeOptionalQuery(undefined)).toBeNull();
    fc.assert(
      fc.property(queryText, (q) => {
        const n = normalizeQuery(q);
        expect(n).toBe(q.normalize('NFKC').toLowerCase().trim().replace(/\s+/g, ' '));
        expect(normalizeQuery(n)).toBe(n);
      }),
      { numRuns: RUNS },
    );
  });

  it('is the term key of configuration and, after markup is stripped, the autocomplete matching form', () => {
    fc.assert(
      fc.property(queryText, (q) => {
        expect(normalizeTerm(q)).toBe(normalizeQuery(q));
        expect(autocompleteNormalize(q)).toBe(normalizeQuery(sanitizeQuery(q)));
      }),
      { numRuns: RUNS },
    );
    // plain text is keyed identically by autocomplete and the trending aggregates
    expect(autocompleteNormalize('  Red   DRESS ')).toBe(normalizeQuery('  Red   DRESS '));
    expect(autocompleteNormalize('<b>red</b> dress')).toBe('red dress');
  });
});
