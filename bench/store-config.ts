// Store-config figures: how long a configuration change takes to become visible in a StoreDirectory
// (the spec's bound is 1 s), and what token authentication costs per request, against a baseline of the
// bare SHA-256 it is built on. Runs its own embedded broker and schema registry on free ports.
//
//   node bench/store-config.ts            (N=200 writes; BENCH_WRITES=1000 for more)
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createKafka } from '../services/common/kafka/index.ts';
import { startBroker } from '../services/kafka-broker/index.ts';
import { startSchemaRegistry } from '../services/schema-registry/index.ts';
import { createEnvelopeCodec } from '../services/store-config/codec.ts';
import { ConfigDirectory } from '../services/store-config/directory.ts';
import { openConfigWriter } from '../services/store-config/writer.ts';

const N = Number(process.env.BENCH_WRITES ?? 200);
const logger = pino({ level: 'error' });
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-store-config-'));
const TOPIC = 'stores.config.v1';

const broker = await startBroker({ port: 0, dataDir, logger, groupOptions: { initialRebalanceDelayMs: 50 } });
const brokers = [`127.0.0.1:${broker.port}`];
const registry = await startSchemaRegistry({ brokers, topic: '_schemas', port: 0, logger });
const directory = new ConfigDirectory({
  kafka: createKafka(brokers, 'bench-directory', logger),
  topic: TOPIC,
  codec: createEnvelopeCodec({ registryUrl: registry.url, topic: TOPIC }),
  logger,
});
const writer = openConfigWriter({ brokers, registryUrl: registry.url, logger });

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

try {
  await directory.start();
  await directory.ready();
  const { storeId, token } = await writer.createStore({ name: 'bench' });
  await writer.reader();

  // write → visible: from the call (validation, produce, broker ack) and from the broker's ack
  const fromCall: number[] = [];
  const fromAck: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const w = await writer.putConfig(storeId, 'synonym', {
      id: `s${i % 20}`,
      type: 'two_way',
      terms: [`term${i}`, `alt${i}`],
    });
    const t1 = performance.now();
    if (!(await directory.waitForOffset(w.partition, w.offset, 10_000)))
      throw new Error(`offset ${w.offset} not visible after 10 s`);
    const t2 = performance.now();
    fromCall.push(t2 - t0);
    fromAck.push(t2 - t1);
  }
  fromCall.sort((a, b) => a - b);
  fromAck.sort((a, b) => a - b);
  process.stdout.write(`config change → visible in the directory (${N} writes, one at a time)\n`);
  process.stdout.write(
    `  from the writer call: p50 ${fmt(pct(fromCall, 50))}  p95 ${fmt(pct(fromCall, 95))}  p99 ${fmt(pct(fromCall, 99))}  max ${fmt(fromCall[fromCall.length - 1])}\n`,
  );
  process.stdout.write(
    `  from the broker ack:  p50 ${fmt(pct(fromAck, 50))}  p95 ${fmt(pct(fromAck, 95))}  p99 ${fmt(pct(fromAck, 99))}  max ${fmt(fromAck[fromAck.length - 1])}\n`,
  );
  process.stdout.write(
    `  bound 1000 ms: ${fromCall[fromCall.length - 1] < 1000 ? 'met' : 'MISSED'} (max/bound = ${(fromCall[fromCall.length - 1] / 1000).toFixed(3)})\n`,
  );

  // authentication cost per request vs. the SHA-256 it needs anyway
  const M = 300_000;
  if (!directory.authenticate(token).ok) throw new Error('bench token does not authenticate');
  let t = performance.now();
  let ok = 0;
  for (let i = 0; i < M; i++) if (directory.authenticate(token).ok) ok++;
  const authNs = ((performance.now() - t) * 1e6) / M;
  t = performance.now();
  let sink = 0;
  for (let i = 0; i < M; i++) sink += createHash('sha256').update(token, 'utf8').digest()[0];
  const hashNs = ((performance.now() - t) * 1e6) / M;
  t = performance.now();
  for (let i = 0; i < M; i++) if (!directory.authenticate(`sfat_wrong${i & 1023}`).ok) sink++;
  const badNs = ((performance.now() - t) * 1e6) / M;
  if (ok !== M || sink === 0) throw new Error('authentication results inconsistent');
  process.stdout.write(`token authentication (${M} calls each, in memory)\n`);
  process.stdout.write(`  valid token:   ${authNs.toFixed(0)} ns/call (${(1e9 / authNs / 1e6).toFixed(2)} M/s)\n`);
  process.stdout.write(`  unknown token: ${badNs.toFixed(0)} ns/call\n`);
  process.stdout.write(
    `  baseline SHA-256 alone: ${hashNs.toFixed(0)} ns/call → authenticate/baseline = ${(authNs / hashNs).toFixed(2)}×\n`,
  );
} finally {
  await writer.close();
  await directory.stop();
  await registry.close();
  await broker.close();
  rmSync(dataDir, { recursive: true, force: true });
}
