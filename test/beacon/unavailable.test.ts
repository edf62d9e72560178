// Kafka down → no success for anything not stored: the intake answers 503 + Retry-After, reports nothing
// as accepted, counts it in beacon_unavailable_total, leaves no dedup mark behind (so the retry is
// produced), and the retry after Kafka is back is stored exactly once. Run with the in-memory registry
// client and once against the real schema registry (test/schema-registry/fixture.ts) on the same broker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrichedEvent } from '../../schemas/events.ts';
import { createRegistryClient, type RegistryClient } from '../../services/common/kafka/registry-client.ts';
import { markedEventIds } from '../../services/beacon/dedup.ts';
import { loadConfig } from '../../services/common/config.ts';
import type { UnavailableReason } from '../../services/beacon/produce-queue.ts';
import { registry as metrics } from '../../services/common/metrics.ts';
import { startRegistryFixture } from '../schema-registry/fixture.ts';
import {
  type BeaconApp,
  eventId,
  readTopic,
  type RedisServer,
  startBeaconApp,
  startRedis,
  startTestBroker,
  type TestBroker,
} from './helpers.ts';

const STORE = 'store-unavailable';
const TOKEN = 'tok-unavailable-0123456789';

function batch(ids: string[]) {
  return {
    events: ids.map((id, i) => ({
      event_id: id,
      event_type: 'product_view',
      timestamp: new Date().toISOString(),
      session_id: `sess-${i % 2}`,
      product_id: 1000 + i,
    })),
  };
}

async function post(app: BeaconApp, body: unknown) {
  const res = await fetch(`${app.url}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-storefront-access-token': TOKEN },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const REASONS: UnavailableReason[] = ['kafka_error', 'timeout', 'failing', 'overloaded', 'shutdown'];

/** beacon_unavailable_total by cause */
async function unavailableCounts(): Promise<Map<string, number>> {
  const m = metrics.getSingleMetric('beacon_unavailable_total');
  const values = m ? (await m.get()).values : [];
  return new Map(values.map((v) => [String(v.labels.cause), v.value]));
}

/** a broker that can be stopped and started again on the same address and log, and a registry on it */
interface Cluster {
  brokers: string[];
  /** undefined: the in-memory registry client of the helpers */
  registry?: RegistryClient;
  stop(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

async function brokerOnly(): Promise<Cluster> {
  let broker: TestBroker = await startTestBroker();
  return {
    brokers: broker.brokers,
    stop: () => broker.close(),
    async restart() {
      broker = await startTestBroker({ port: broker.broker.port, dataDir: broker.dataDir });
    },
    close: () => broker.stop(),
  };
}

async function brokerWithRegistry(): Promise<Cluster> {
  const fixture = await startRegistryFixture();
  return {
    brokers: fixture.brokers,
    registry: createRegistryClient({ url: fixture.registry.url }),
    stop: () => fixture.stopBroker(),
    restart: () => fixture.restartBroker(),
    close: () => fixture.close(),
  };
}

describe.each([
  { mode: 'inline prepare, producer on the main thread', workers: 0, startCluster: brokerOnly },
  { mode: 'a producing prepare worker', workers: 1, startCluster: brokerOnly },
  { mode: 'the real schema registry, a producing prepare worker', workers: 1, startCluster: brokerWithRegistry },
])('POST /beacon when Kafka is unreachable ($mode)', ({ workers, startCluster }) => {
  let redis: RedisServer;
  let cluster: Cluster;
  let app: BeaconApp;

  beforeAll(async () => {
    redis = await startRedis();
    cluster = await startCluster();
    app = await startBeaconApp({
      brokers: cluster.brokers,
      redisUrl: redis.url,
      stores: [{ storeId: STORE, token: TOKEN }],
      settings: { BEACON_PRODUCE_TIMEOUT_MS: 2_000, BEACON_WORKERS: workers },
      registry: cluster.registry,
    });
  });
  afterAll(async () => {
    await app?.close();
    await cluster?.close();
    await redis?.stop();
  });

  it('answers 201 while Kafka is up, 503 + Retry-After with nothing accepted once it is down, and stores the retry once', async () => {
    const first = [eventId(), eventId()];
    const ok = await post(app, batch(first));
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ accepted: 2, duplicates: 0, rejected: 0 });

    await cluster.stop();
    const during = [eventId(), eventId(), eventId()];
    const countsBefore = await unavailableCounts();
    const down = await post(app, batch(during));
    expect(down.status).toBe(503);
    // exactly this one 503 is counted, under one of the produce queue's causes
    const countsAfter = await unavailableCounts();
    const increased = [...countsAfter].filter(([cause, n]) => n > (countsBefore.get(cause) ?? 0));
    expect(increased).toHaveLength(1);
    const [cause, n] = increased[0];
    expect(REASONS).toContain(cause);
    expect(n - (countsBefore.get(cause) ?? 0)).toBe(1);
    expect(Number(down.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(down.body).not.toHaveProperty('accepted');
    expect(down.body).toMatchObject({ error: { code: 'unavailable' } });
    // nothing was marked as seen: a retry will be produced
    const HORIZON_MS = loadConfig({}).BEACON_DEDUP_HORIZON_MS; // the app's setting (startBeaconApp uses the defaults)
    expect(await markedEventIds(app.redis, STORE, during, HORIZON_MS)).toEqual(during.map(() => false));
    // the events acknowledged before the outage are marked
    expect(await markedEventIds(app.redis, STORE, first, HORIZON_MS)).toEqual(first.map(() => true));

    // Kafka comes back on the same address with the same log; the client retries the refused batch
    await cluster.restart();
    let retry = await post(app, batch(during));
    for (let i = 0; i < 20 && retry.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 500));
      retry = await post(app, batch(during));
    }
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ accepted: 3, duplicates: 0 });
    // and a second retry (client did not see the 201) is not produced again
    const again = await post(app, batch(during));
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ accepted: 3, duplicates: 3 });

    const records = await readTopic(app.kafka, app.beacon.topics.events, { timeoutMs: 10_000 });
    const ids: string[] = [];
    for (const r of records)
      ids.push((await app.beacon.codec.decode<EnrichedEvent>(r.value, app.beacon.topics.events)).value.event_id);
    // every acknowledged event is in the log; a produce call that was in flight when Kafka went away may
    // have landed too (the sinks drop such doubles by event_id), but every id the client sent is there
    for (const id of [...first, ...during]) expect(ids).toContain(id);
    expect(ids.filter((id) => first.includes(id))).toHaveLength(2);
    if (cluster.registry) {
      // every value is framed with the id the real registry gave the events schema
      const latest = await cluster.registry.getVersion(`${app.beacon.topics.events}-value`, 'latest');
      expect(new Set(records.map((r) => r.value.readInt32BE(1)))).toEqual(new Set([latest.id]));
    }
  });
});

describe('POST /beacon when Redis is unreachable', () => {
  let redis: RedisServer;
  let broker: TestBroker;
  let app: BeaconApp;

  beforeAll(async () => {
    redis = await startRedis();
    broker = await startTestBroker();
    app = await startBeaconApp({
      brokers: broker.brokers,
      redisUrl: redis.url,
      stores: [{ storeId: STORE, token: TOKEN }],
    });
  });
  afterAll(async () => {
    await app?.close();
    await broker?.stop();
    await redis?.stop();
  });

  it('still stores events (dedup fails open; the sinks dedup by event_id) and counts the Redis errors', async () => {
    await redis.stop();
    const ids = [eventId(), eventId()];
    const r = await post(app, batch(ids));
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ accepted: 2, duplicates: 0 });
    const records = await readTopic(app.kafka, app.beacon.topics.events, { timeoutMs: 10_000 });
    const got: string[] = [];
    for (const rec of records)
      got.push((await app.beacon.codec.decode<EnrichedEvent>(rec.value, app.beacon.topics.events)).value.event_id);
    expect(got).toEqual(expect.arrayContaining(ids));
    const { registry } = await import('../../services/common/metrics.ts');
    const errors = (await registry.getSingleMetric('beacon_dedup_errors_total')!.get()).values;
    expect(errors.find((v) => v.labels.op === 'check')?.value).toBeGreaterThan(0);
  });
});
