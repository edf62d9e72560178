// With Kafka gone the registry keeps answering reads from memory, refuses writes with Confluent's
// 50001 instead of acknowledging what it could not persist, and nothing it refused shows up later.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createKafka } from '../../services/common/kafka/index.ts';
import { startBroker } from '../../services/kafka-broker/index.ts';
import { type RunningSchemaRegistry, startSchemaRegistry } from '../../services/schema-registry/index.ts';
import { sr } from './fixture.ts';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sr-outage-'));
const quiet = pino({ level: 'silent' });
const registries: RunningSchemaRegistry[] = [];
afterAll(async () => {
  for (const r of registries) await r.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('schema registry during a Kafka outage', () => {
  it('serves reads, refuses writes with 50001, and holds only acknowledged writes after Kafka returns', async () => {
    const broker = await startBroker({ port: 0, dataDir, logger: quiet, groupOptions: { initialRebalanceDelayMs: 0 } });
    const port = broker.port;
    const kafka = () =>
      createKafka([`127.0.0.1:${port}`], 'sr-outage', quiet, {
        connectionTimeout: 1_000,
        retry: { retries: 2, maxRetryTime: 500 },
      });
    const first = await startSchemaRegistry({
      kafka: kafka(),
      topic: '_schemas',
      port: 0,
      logger: quiet,
      writeTimeoutMs: 3_000,
    });
    registries.push(first);
    const ok = await sr(first.url, 'POST', '/subjects/outage-value/versions', { schema: '"string"' });
    expect(ok.status).toBe(200);

    await broker.close();
    const refused = await sr(first.url, 'POST', '/subjects/outage-other-value/versions', { schema: '"long"' });
    expect(refused.status).toBe(500);
    expect(refused.body.error_code).toBe(50001);
    // reads are answered from memory
    expect((await sr(first.url, 'GET', '/subjects')).body).toEqual(['outage-value']);
    expect((await sr(first.url, 'GET', `/schemas/ids/${ok.body.id}`)).status).toBe(200);
    await first.close();

    // Kafka back on the same data: the rebuilt state holds the acknowledged write and not the refused one
    const again = await startBroker({ port, dataDir, logger: quiet, groupOptions: { initialRebalanceDelayMs: 0 } });
    try {
      const second = await startSchemaRegistry({ kafka: kafka(), topic: '_schemas', port: 0, logger: quiet });
      registries.push(second);
      expect((await sr(second.url, 'GET', '/subjects')).body).toEqual(['outage-value']);
      expect((await sr(second.url, 'GET', '/subjects/outage-value/versions/1')).body.id).toBe(ok.body.id);
    } finally {
      for (const r of registries.splice(0)) await r.close();
      await again.close();
    }
  });
});
