// Fuzzing the wire: random bytes, truncated frames, absurd size prefixes, unknown API keys and valid
// headers followed by garbage bodies. Each case runs on its own connection; the broker must close or
// answer that connection only, and stay fully usable by a fresh client afterwards.
import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ALL_APIS } from '../../services/kafka-broker/protocol/apis/index.ts';
import { startTestBroker, type TestBroker } from './helpers/broker.ts';

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker({ maxFrameBytes: 1024 * 1024, maxPartitionsPerTopic: 4 });
});
afterAll(async () => {
  await broker?.stop();
});

/** sends bytes, waits until the broker closes the socket or `ms` passed; returns what came back */
function exchange(bytes: Uint8Array, ms = 150): Promise<{ closedByBroker: boolean; received: number }> {
  return new Promise((resolve) => {
    const s = net.connect(broker.port, '127.0.0.1');
    let received = 0;
    let done = false;
    const finish = (closedByBroker: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ closedByBroker, received });
    };
    const timer = setTimeout(() => finish(false), ms);
    s.on('data', (d) => (received += d.length));
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
    s.on('connect', () => s.write(bytes));
  });
}

function frame(body: Uint8Array): Buffer {
  const b = Buffer.alloc(4 + body.length);
  b.writeInt32BE(body.length, 0);
  Buffer.from(body).copy(b, 4);
  return b;
}

function header(apiKey: number, version: number, correlationId: number, clientId = 'fuzz'): Buffer {
  const id = Buffer.from(clientId);
  const h = Buffer.alloc(10 + id.length);
  h.writeInt16BE(apiKey, 0);
  h.writeInt16BE(version, 2);
  h.writeInt32BE(correlationId, 4);
  h.writeInt16BE(id.length, 8);
  id.copy(h, 10);
  return h;
}

async function assertBrokerHealthy(): Promise<void> {
  const kafka = broker.kafka(`healthy-${Date.now()}`);
  const producer = kafka.producer();
  await producer.connect();
  const topic = `health-${Math.random().toString(36).slice(2)}`;
  await producer.send({ topic, messages: [{ key: 'k', value: 'still alive' }] });
  await producer.disconnect();
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(topic);
  expect(offsets[0].high).toBe('1');
  await admin.disconnect();
}

test('random bytes', async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ minLength: 0, maxLength: 300 }), async (bytes) => {
      await exchange(bytes, 60);
    }),
    { numRuns: 150 },
  );
  await assertBrokerHealthy();
});

test('absurd and negative size prefixes close the connection', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.integer({ min: 1024 * 1024 + 1, max: 0x7fffffff }), fc.integer({ min: -0x80000000, max: 7 })),
      async (size) => {
        const b = Buffer.alloc(16);
        b.writeInt32BE(size, 0);
        const r = await exchange(b, 1000);
        expect(r.closedByBroker).toBe(true);
        expect(r.received).toBe(0);
      },
    ),
    { numRuns: 60 },
  );
  await assertBrokerHealthy();
});

test('unknown API keys close the connection', async () => {
  const known = new Set(ALL_APIS.map((a) => a.key));
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: -32768, max: 32767 }).filter((k) => !known.has(k)),
      fc.integer({ min: -5, max: 20 }),
      async (key, version) => {
        const r = await exchange(frame(header(key, version, 7)), 1000);
        expect(r.closedByBroker).toBe(true);
        expect(r.received).toBe(0);
      },
    ),
    { numRuns: 60 },
  );
  await assertBrokerHealthy();
});

test('truncated frames: the size prefix promises more than is sent', async () => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ALL_APIS), fc.integer({ min: 1, max: 200 }), async (api, missing) => {
      const body = Buffer.concat([header(api.key, api.maxVersion, 1), Buffer.alloc(20)]);
      const f = frame(body);
      f.writeInt32BE(body.length + missing, 0);
      await exchange(f, 40);
    }),
    { numRuns: 60 },
  );
  await assertBrokerHealthy();
});

test('valid header + garbage body, every API and version', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc
        .constantFrom(...ALL_APIS)
        .chain((api) => fc.tuple(fc.constant(api), fc.integer({ min: api.minVersion, max: api.maxVersion }))),
      fc.uint8Array({ minLength: 0, maxLength: 120 }),
      async ([api, version], garbage) => {
        const flexible = version >= api.flexibleFrom;
        const h = header(api.key, version, 42);
        const parts = [h];
        if (flexible && api.key !== 18) parts.push(Buffer.from([0])); // empty header tagged fields
        parts.push(Buffer.from(garbage));
        await exchange(frame(Buffer.concat(parts)), 60);
      },
    ),
    { numRuns: 400 },
  );
  await assertBrokerHealthy();
});

test('an unsupported ApiVersions version gets UNSUPPORTED_VERSION with the v0 table', async () => {
  const res = await new Promise<Buffer>((resolve, reject) => {
    const s = net.connect(broker.port, '127.0.0.1', () => s.write(frame(header(18, 99, 1234))));
    const chunks: Buffer[] = [];
    s.on('data', (d) => {
      chunks.push(d);
      const all = Buffer.concat(chunks);
      if (all.length >= 4 && all.length >= 4 + all.readInt32BE(0)) {
        s.destroy();
        resolve(all);
      }
    });
    s.on('error', reject);
  });
  expect(res.readInt32BE(4)).toBe(1234);
  expect(res.readInt16BE(8)).toBe(35);
  const n = res.readInt32BE(10);
  const table = new Map<number, [number, number]>();
  for (let i = 0; i < n; i++)
    table.set(res.readInt16BE(14 + i * 6), [res.readInt16BE(16 + i * 6), res.readInt16BE(18 + i * 6)]);
  expect(table.get(18)).toEqual([0, 3]);
  expect(table.get(0)).toEqual([3, 9]);
});
