// Offset commits failing while fetching goes on (the group coordinator unreachable: its Kafka node killed,
// as in test/distributed/topology-kafka.test.ts) and the group re-joined afterwards. kafkajs keeps
// fetching from the offsets the runtime resolved, so chunks after the failed commit are processed and
// written while the group's committed offset stays behind; the re-joined consumer then reads them all
// again from the committed offset, in one fetch. The re-read must reproduce the first attempt's chunks
// (same boundaries, same insert_deduplication_token), or the aggregates fed by materialized views count
// them twice while events_raw, a ReplacingMergeTree keyed by event_id, hides it once merged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsumerClient, ConsumerClientFactory, SourceBatch } from '../../services/common/kafka/client.ts';
import { enrichedEvent, produce, type StreamsHarness, startStreamsHarness, waitCaughtUp } from './helpers.ts';

const STORE = 'store-failed-commits';
const PRODUCTS = ['11', '12', '13', '14', '15', '16', '17'];

/** one view of every product, in one session (one partition) */
function views(round: number) {
  const ts = new Date(Date.now() - 60_000 + round * 1_000).toISOString();
  return PRODUCTS.map((p) => ({
    key: `${STORE}:s-1`,
    value: enrichedEvent({
      event_type: 'product_view',
      store_id: STORE,
      session_id: 's-1',
      timestamp: ts,
      product_id: p,
    }),
  }));
}

/** The real consumer client; while `failing`, every offset commit fails as it does against a dead coordinator. */
function commitsFailingWhile(real: ConsumerClientFactory, state: { failing: boolean; failed: number }) {
  return ((opts) => {
    const client = real(opts);
    const failing = (batch: SourceBatch): SourceBatch => ({
      ...batch,
      resolve: (offset) => batch.resolve(offset),
      isActive: () => batch.isActive(),
      heartbeat: () => batch.heartbeat(),
      commit: async (next) => {
        if (state.failing) {
          state.failed++;
          throw new Error('This is not the correct coordinator for this group (NOT_COORDINATOR)');
        }
        await batch.commit(next);
      },
    });
    const wrapped: ConsumerClient = {
      start: (onBatch) => client.start((batch) => onBatch(failing(batch))),
      startFetches: (onFetch) => client.startFetches((batches) => onFetch(batches.map(failing))),
      stop: () => client.stop(),
      pause: () => client.pause(),
      resume: () => client.resume(),
      committed: (topic) => client.committed(topic),
      highWatermarks: (topic) => client.highWatermarks(topic),
      watermarks: (topic) => client.watermarks(topic),
    };
    return wrapped;
  }) satisfies ConsumerClientFactory;
}

describe('offset commits failing while the consumer goes on', () => {
  let h: StreamsHarness;
  beforeAll(async () => {
    h = await startStreamsHarness('failed-commits', {
      processors: 'events',
      env: { STREAMS_MAX_BATCH_MESSAGES: '10', STREAMS_LINGER_MS: '20' },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  const count = async (sql: string) => Number((await h.db.query<{ n: string }>(sql, { s: STORE }))[0]?.n ?? 0);
  const rows = () => count('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}');
  const viewsCounted = () => count('SELECT sum(views) AS n FROM product_daily_engagement WHERE store_id = {s:String}');

  it('counts every event once when the group re-reads chunks it wrote but could not commit', {
    timeout: 180_000,
  }, async () => {
    const topic = h.infra.topic('events');
    let sent = 0;
    // 1. a first round, processed and committed
    await produce(h.infra, 'events', views(0));
    sent += PRODUCTS.length;
    await waitCaughtUp(h.infra.kafka, [{ group: 'streams.events', topic }], 60_000);
    expect(await viewsCounted()).toBe(sent);

    // 2. the coordinator goes: every commit fails, the consumer fetches on from the offsets it resolved.
    // Rounds of 7 events, each written before the next is produced (chunks of 7)
    const state = { failing: true, failed: 0 };
    const real = h.streams.deps.createClient;
    h.streams.deps.createClient = commitsFailingWhile(real, state);
    await h.streams.restart('events');
    for (let round = 1; round <= 4; round++) {
      await produce(h.infra, 'events', views(round));
      sent += PRODUCTS.length;
      await expect.poll(rows, { timeout: 60_000, interval: 100 }).toBe(sent);
    }
    // (a chunk's commit comes after its writes)
    await expect.poll(() => state.failed, { timeout: 30_000 }).toBeGreaterThanOrEqual(4);
    expect(await viewsCounted()).toBe(sent);
    // nothing committed past round 0
    const committed = await h.streams.runners.get('events')?.committed();
    expect([...(committed?.values() ?? [])].reduce((n, o) => n + (o > 0n ? o : 0n), 0n)).toBe(BigInt(PRODUCTS.length));

    // 3. the coordinator is back and the group re-joins: the consumer starts over from the committed
    // offset (after round 0) and reads rounds 1–4 in one fetch, cut at the journaled boundaries
    h.streams.deps.createClient = real;
    await h.streams.restart('events');
    await waitCaughtUp(h.infra.kafka, [{ group: 'streams.events', topic }], 60_000);
    expect(await count('SELECT uniqExact(event_id) AS n FROM events_raw WHERE store_id = {s:String}')).toBe(sent);
    expect(await viewsCounted()).toBe(sent);
    const perProduct = await h.db.query<{ product_id: string; v: string }>(
      `SELECT toString(product_id) AS product_id, toString(sum(views)) AS v FROM product_daily_engagement
       WHERE store_id = {s:String} GROUP BY product_id ORDER BY product_id`,
      { s: STORE },
    );
    expect(perProduct).toEqual(PRODUCTS.map((p) => ({ product_id: p, v: '5' })));
  });
});
