// The store_config processor (streams/store-config/processor.ts) against the real broker, registry,
// redis-server and a private chDB database: the admin writer's records become the analysts' projection
// (latest state per item, tombstones removed, secrets redacted), a record that does not validate goes to
// the DLQ without holding back the records after it, and a replay from the compacted log rebuilds the
// table with no difference.
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../../schemas/topics.ts';
import { topicName } from '../../services/common/config.ts';
import { createEnvelopeCodec } from '../../services/store-config/codec.ts';
import { type ConfigWriter, openConfigWriter } from '../../services/store-config/writer.ts';
import { runReplay } from '../../streams/replay/replay.ts';
import { readDlq } from '../catalog/streams.ts';
import { SAMPLE_BLOCK_ID, sampleItems } from '../helpers/stores.ts';
import { type StreamsHarness, startStreamsHarness } from './helpers.ts';

describe('store_config processor', () => {
  let h: StreamsHarness;
  let writer: ConfigWriter;
  let topic: string;
  let storeId: string;

  beforeAll(async () => {
    h = await startStreamsHarness('store-config', { processors: 'store_config' });
    topic = topicName(h.config, TOPICS.storeConfig.name);
    writer = openConfigWriter({
      brokers: h.infra.brokers,
      registryUrl: h.infra.registryUrl,
      topicPrefix: h.infra.prefix,
      logger: h.logger,
    });
  });
  afterAll(async () => {
    await writer?.close();
    await h?.stop();
  });

  const current = (store: string) =>
    h.db.query<{ kind: string; item_id: string; payload: string }>(
      'SELECT kind, item_id, payload FROM store_config_current WHERE store_id = {store:String} ORDER BY kind, item_id',
      { store },
    );

  it('projects every record (latest state per item, tombstones removed, secrets redacted)', async () => {
    storeId = (await writer.createStore({ name: 'Projected store' })).storeId;
    const samples = sampleItems();
    for (const kind of ['sort_order', 'block', 'market'] as const)
      for (const item of samples[kind] ?? []) await writer.putConfig(storeId, kind, item);
    await writer.putConfig(storeId, 'webhook_secret', { id: 'hook-1', secret: 'a-very-secret-webhook-key' });
    await writer.putConfig(storeId, 'synonym', { id: 'to-delete', type: 'two_way', terms: ['a', 'b'] });
    await writer.deleteConfig(storeId, 'synonym', 'to-delete');
    await writer.putConfig(storeId, 'synonym', { id: 'last', type: 'two_way', terms: ['c', 'd'] });

    await expect
      .poll(async () => (await current(storeId)).map((r) => `${r.kind}|${r.item_id}`), { timeout: 30_000 })
      .toContain('synonym|last');
    const rows = await current(storeId);
    const keys = rows.map((r) => `${r.kind}|${r.item_id}`);
    expect(keys).toContain(`block|${SAMPLE_BLOCK_ID}`);
    expect(keys).toContain(`store|${storeId}`);
    expect(keys).not.toContain('synonym|to-delete');
    expect(JSON.parse(rows.find((r) => r.kind === 'webhook_secret')?.payload ?? '{}')).toMatchObject({
      id: 'hook-1',
      secret: '[redacted]',
    });
    expect(JSON.stringify(rows)).not.toContain('a-very-secret-webhook-key');
    expect(JSON.parse(rows.find((r) => r.kind === 'market')?.payload ?? '{}')).toMatchObject({ code: 'us' });
    const tomb = await h.db.query<{ n: string }>(
      "SELECT count() AS n FROM store_config WHERE store_id = {store:String} AND kind = 'synonym' AND item_id = 'to-delete' AND deleted = 1",
      { store: storeId },
    );
    expect(Number(tomb[0].n)).toBe(1);
  });

  it('sends a record whose payload does not validate to the DLQ and goes on with the next ones', async () => {
    const codec = createEnvelopeCodec({ registryUrl: h.infra.registryUrl, topic });
    const badItem = `bad-${newUlid().toLowerCase()}`;
    const value = await codec.encode({
      store_id: storeId,
      kind: 'synonym',
      item_id: badItem,
      version: newUlid(),
      written_at: Date.now(),
      payload_json: JSON.stringify({ id: badItem, type: 'no-such-type' }),
    });
    await h.infra.producer.send({ topic, messages: [{ key: `${storeId}|synonym|${badItem}`, value }] });
    await writer.putConfig(storeId, 'synonym', { id: 'after-bad', type: 'two_way', terms: ['e', 'f'] });

    const [dead] = await readDlq(h.infra, topic, 1, (m) => m.key === `${storeId}|synonym|${badItem}`, 30_000);
    expect(dead).toMatchObject({ processor: 'store_config' });
    expect(dead.reason).toContain('payload');
    await expect
      .poll(async () => (await current(storeId)).map((r) => r.item_id), { timeout: 30_000 })
      .toContain('after-bad');
    expect((await current(storeId)).map((r) => r.item_id)).not.toContain(badItem);
  });

  it('a replay from the compacted log rebuilds store_config with no difference', async () => {
    const before = await current(storeId);
    const result = await runReplay(h.replayEnv(), { processor: 'store_config', from: { kind: 'earliest' } }, () => {});
    expect({ swapped: result.swapped, differences: result.differences }).toEqual({ swapped: true, differences: 0 });
    expect(await current(storeId)).toEqual(before);
  });
});
