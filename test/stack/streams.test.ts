// The running stack end to end: POST /beacon → Kafka → the stream processors in the app → aggregates
// visible on the analysts' SQL endpoint (a duplicate event_id counts once everywhere), and the replay
// endpoint's guard rails.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimField } from '../../streams/runtime/claims.ts';
import { sql, stack } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore } from '../helpers/stores.ts';

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

async function until<T>(fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe('beacon → Kafka → stream processors → aggregates', () => {
  let storeId: string;
  let token: string;
  beforeAll(async () => {
    ({ storeId, token } = await createTestStore({ name: 'streams stack test' }));
  });
  afterAll(async () => {
    await closeTestStoreWriter();
  });

  const beacon = async (events: Record<string, unknown>[]) => {
    const r = await fetch(`${stack().httpUrl}/beacon`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': UA, 'x-storefront-access-token': token },
      body: JSON.stringify({ events }),
    });
    expect(r.status, await r.clone().text()).toBeLessThan(300);
  };

  it('turns beacon events into raw rows, sessions, co-view pairs, searched-then-viewed and popularity, counting a duplicate once', async () => {
    const t = Date.now() - 60_000;
    const ev = (session: string, i: number, type: string, extra: Record<string, unknown>) => ({
      event_id: newUlid(),
      event_type: type,
      timestamp: new Date(t + i * 1000).toISOString(),
      session_id: session,
      ...extra,
    });
    const s1 = [
      ev('s1', 0, 'search', { query: 'Wool Socks', contextual_data: { search_source: 'typed' } }),
      ev('s1', 1, 'product_view', { product_id: 501 }),
      ev('s1', 2, 'product_view', { product_id: 502 }),
      ev('s1', 3, 'add_to_cart', { product_id: 502, quantity: 1, price: '7.50', currency: 'EUR' }),
    ];
    const s2 = [ev('s2', 0, 'product_view', { product_id: 501 }), ev('s2', 1, 'product_view', { product_id: 502 })];
    await beacon([...s1, ...s2]);
    // a client retry of the first view, in a later request: counts once (the beacon's own dedup usually
    // stops it; the processors' event_id claims catch what gets past it)
    await beacon([s1[1]]);

    const rows = await until(async () => {
      const r = await sql<{ n: number }>('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}', {
        s: storeId,
      });
      return r[0].n >= 6 ? r : undefined;
    });
    expect(rows[0].n).toBe(6);
    // a batch inserts its tables one after another and the processors run on a thread of their own, so a
    // read can fall between two batches (the sessions may sit on different partitions) or two inserts: poll
    const poll = (query: string) => expect.poll(() => sql(query, { s: storeId }), { timeout: 30_000, interval: 200 });
    await poll(
      'SELECT toString(product_a) AS a, toString(product_b) AS b, sum(sessions) AS n FROM co_view_pairs WHERE store_id = {s:String} GROUP BY a, b ORDER BY a, b',
    ).toEqual([
      { a: '501', b: '501', n: 2 },
      { a: '501', b: '502', n: 2 },
      { a: '502', b: '501', n: 2 },
      { a: '502', b: '502', n: 2 },
    ]);
    await poll(
      'SELECT query, toString(product_id) AS p, sum(sessions) AS n FROM searched_then_viewed WHERE store_id = {s:String} GROUP BY query, p ORDER BY p',
    ).toEqual([
      { query: 'wool socks', p: '501', n: 1 },
      { query: 'wool socks', p: '502', n: 1 },
    ]);
    await poll(
      'SELECT toString(product_id) AS p, sum(views) AS v, sum(add_to_carts) AS c FROM product_daily_engagement WHERE store_id = {s:String} GROUP BY p ORDER BY p',
    ).toEqual([
      { p: '501', v: 2, c: 0 },
      { p: '502', v: 2, c: 1 },
    ]);
    await poll(
      'SELECT session_id, seq, sum(events) AS e, sum(product_views) AS v, sum(searches) AS q FROM sessions WHERE store_id = {s:String} GROUP BY session_id, seq ORDER BY session_id',
    ).toEqual([
      { session_id: 's1', seq: 1, e: 4, v: 2, q: 1 },
      { session_id: 's2', seq: 1, e: 2, v: 2, q: 0 },
    ]);
    // the processors' metrics are on /metrics
    const metrics = await (await fetch(`${stack().httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/stream_messages_total\{processor="events",mode="live",outcome="written"\} \d+/);
    expect(metrics).toMatch(/stream_batch_messages_count\{processor="events",mode="live"\} [1-9]/);
  });

  it('counts a client retry once even after Redis forgot every dedup mark (the processors check their ledger)', async () => {
    const view = {
      event_id: newUlid(),
      event_type: 'product_view',
      timestamp: new Date().toISOString(),
      session_id: 'forgetful',
      product_id: 777,
    };
    await beacon([view]);
    await until(async () =>
      (
        await sql<{ n: number }>(
          'SELECT count() AS n FROM events_raw WHERE store_id = {s:String} AND product_id = 777',
          { s: storeId },
        )
      )[0].n
        ? true
        : undefined,
    );
    // Redis loses what it knew of this event: the beacon's mark, the processor's claim and the epoch marker
    const redis = new Redis(stack().redisUrl);
    try {
      const keys = [...(await redis.keys(`*${view.event_id}*`)), ...(await redis.keys('sd:streams:claims-epoch:*'))];
      expect(keys.length).toBeGreaterThanOrEqual(1);
      await redis.del(...keys);
      // the processor's claim is a field (the id's hash) of one of the store's claim shards
      let claims = 0;
      for (const bucket of await redis.keys(`sd:streams:claims:*:{${storeId}}:*`))
        claims += await redis.hdel(bucket, claimField(view.event_id));
      expect(claims).toBe(1);
      // the beacon's mark is a member of one of the store's dedup bucket sets
      let removed = 0;
      for (const bucket of await redis.keys(`dedup:{${storeId}}:bucket:*`))
        removed += await redis.srem(bucket, view.event_id);
      expect(removed).toBe(1);
    } finally {
      redis.disconnect();
    }
    await beacon([view]);
    // a marker event behind the retry in the same session (same partition): once it is in, the retry was processed
    const marker = { ...view, event_id: newUlid(), product_id: 778 };
    await beacon([marker]);
    await until(async () =>
      (
        await sql<{ n: number }>(
          'SELECT count() AS n FROM events_raw WHERE store_id = {s:String} AND product_id = 778',
          { s: storeId },
        )
      )[0].n
        ? true
        : undefined,
    );
    expect(
      await sql('SELECT count() AS n FROM events_raw WHERE store_id = {s:String} AND product_id = 777', { s: storeId }),
    ).toEqual([{ n: 1 }]);
    expect(
      await sql(
        'SELECT sum(views) AS v FROM product_daily_engagement WHERE store_id = {s:String} AND product_id = 777',
        { s: storeId },
      ),
    ).toEqual([{ v: 1 }]);
    const metrics = await (await fetch(`${stack().httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/stream_messages_total\{processor="events",mode="live",outcome="duplicate"\} [1-9]/);
  });

  it('guards POST /internal/replay with a bearer token and validates the request with field paths', async () => {
    const url = `${stack().httpUrl}/internal/replay`;
    const noToken = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(noToken.status).toBe(401);
    const wrong = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer nope' },
      body: '{}',
    });
    expect(wrong.status).toBe(401);
    const tokenFile = readFileSync(path.join(stack().dataDir, 'replay.token'), 'utf8').trim();
    const auth = { 'content-type': 'application/json', authorization: `Bearer ${tokenFile}` };
    const bad = await fetch(url, { method: 'POST', headers: auth, body: JSON.stringify({ processor: 'events' }) });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { error: { fields: { path: string }[] } }).error.fields.map((f) => f.path)).toEqual([
      'from',
    ]);
    const badFrom = await fetch(url, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ processor: 'events', from: 'last tuesday' }),
    });
    expect(badFrom.status).toBe(422);
    const unknown = await fetch(url, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ processor: 'nope', from: 'earliest' }),
    });
    expect(unknown.status).toBe(422);
    const partial = await fetch(url, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ processor: 'events', from: '2026-01-01T00:00:00Z', swap: true }),
    });
    expect(partial.status).toBe(422);
  });
});
