// The SDK's tracking state without a stack: ULID event ids, the session window, the shopper context it
// keeps, landing parameters, and the browser bundle (one ES module, no zod inside, importable as is).
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { EVENT_SCHEMAS } from '../../schemas/events.ts';
import { sdkBundle } from '../../services/sdk/bundle.ts';
import { type createClient, createTracker, ulid } from '../../services/sdk/index.ts';

const opts = { token: 't', baseUrl: 'http://127.0.0.1:9', flushDelayMs: 60_000 };

describe('ulid', () => {
  it('is 26 Crockford characters, strictly increasing within one millisecond', () => {
    const now = Date.now();
    const ids = Array.from({ length: 1000 }, () => ulid(now));
    for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('tracker', () => {
  it('keeps the session for 30 minutes of inactivity and starts a new one after', async () => {
    const t = createTracker({ ...opts, sessionTimeoutMs: 40 });
    const first = t.sessionId;
    t.routeChange();
    expect(t.sessionId).toBe(first);
    await new Promise((r) => setTimeout(r, 60));
    t.routeChange();
    expect(t.sessionId).not.toBe(first);
    expect(createTracker(opts).identity()).toMatchObject({
      sessionId: expect.any(String),
      deviceId: expect.any(String),
    });
  });

  it('builds events the beacon schema accepts, with ULID ids, the session, device and attribution token', () => {
    const t = createTracker(opts);
    t.attributed('01JE0000000000000000000000', { kind: 'search' });
    const events = [
      t.productView(42),
      t.search('linen shirt', 'typed', 3),
      t.productClick(42, 1, { query: 'linen shirt' }),
      t.track('add_to_cart', { product_id: 42, quantity: 2 }),
      t.track('collection_view', { collection_handle: 'summer-edit' }),
    ];
    for (const e of events) {
      const parsed = EVENT_SCHEMAS[e.event_type].safeParse(e);
      expect(parsed.error?.issues ?? [], e.event_type).toEqual([]);
      expect(e.attribution_token).toBe('01JE0000000000000000000000');
      expect(e.session_id).toBe(t.sessionId);
      expect(e.device_id).toBe(t.deviceId);
    }
    expect(t.pending()).toBe(5);
  });

  it('keeps the 20 most recent products viewed and the prior searches as context', () => {
    const t = createTracker(opts);
    for (let id = 1; id <= 25; id++) t.productView(id);
    t.productView(7);
    t.search('wool coat', 'typed', 0);
    t.search('linen shirt', 'autocomplete', 12);
    t.productClick(3, 1, { query: 'linen shirt' });
    const c = t.context();
    expect(c.productsViewed?.map((v) => v.productId)).toEqual([
      7, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 6,
    ]);
    expect(c.priorSearches).toEqual([
      { searchQuery: 'linen shirt', hasResults: true, hadClick: true },
      { searchQuery: 'wool coat', hasResults: false },
    ]);
  });

  it('turns utm_products of the landing URL (handles joined by underscores) into dynamicLinking and utm_* into marketing fields', () => {
    const t = createTracker({
      ...opts,
      landingUrl:
        'https://shop.example/collections/x?utm_products=linen-shirt_blue-wool-coat_9000000042&utm_source=news&utm_campaign=june',
    });
    expect(t.dynamicLinking()).toEqual(['linen-shirt', 'blue-wool-coat', '9000000042']);
    // commas are read as separators too
    const commas = createTracker({
      ...opts,
      landingUrl: 'https://shop.example/?utm_products=linen-shirt,blue-wool-coat',
    });
    expect(commas.dynamicLinking()).toEqual(['linen-shirt', 'blue-wool-coat']);
    const e = t.track('collection_view', { collection_handle: 'x' });
    expect(e).toMatchObject({ marketing_source: 'news', marketing_campaign: 'june', marketing_medium: null });
  });
});

describe('bundle', () => {
  it('is one ES module without zod, under 15 KB gzipped, and works when imported as is', async () => {
    const js = await sdkBundle();
    expect(js).not.toMatch(/\bimport\b[^(]/);
    expect(js).not.toContain('ZodError');
    expect(gzipSync(js).length).toBeLessThan(15 * 1024);
    const mod = (await import(`data:text/javascript;base64,${Buffer.from(js).toString('base64')}`)) as {
      createClient: typeof createClient;
      createTracker: typeof createTracker;
    };
    const client = mod.createClient({ token: 't', baseUrl: 'http://127.0.0.1:9' });
    const r = await client.sortOrders();
    expect(r.error?.code).toBe('network_error');
    expect(mod.createTracker(opts).track('autocomplete', { query: 'x' }).event_id).toMatch(/^[0-9A-Z]{26}$/);
  });
});
