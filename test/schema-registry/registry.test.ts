// The schema registry against a real embedded broker: the Confluent REST API as curl users and
// @kafkajs/confluent-schema-registry use it, compatibility with real Avro resolution, and state that
// lives in the compacted `_schemas` topic (survives a restart, rebuilt from the log).
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import { startSchemaRegistry } from '../../services/schema-registry/index.ts';
import { type RegistryFixture, SR_CONTENT_TYPE, sr, startRegistryFixture } from './fixture.ts';

const userV1 = {
  type: 'record',
  name: 'User',
  namespace: 'test.sr',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'age', type: 'int' },
  ],
};
const userV2 = { ...userV1, fields: [...userV1.fields, { name: 'email', type: ['null', 'string'], default: null }] };
const userV3 = { ...userV1, fields: [...userV2.fields, { name: 'tier', type: 'string', default: 'basic' }] };
const userNoDefault = { ...userV1, fields: [...userV1.fields, { name: 'country', type: 'string' }] };
const userAgeString = {
  ...userV1,
  fields: [
    { name: 'id', type: 'string' },
    { name: 'age', type: 'string' },
  ],
};

let fx: RegistryFixture;
let base: string;
beforeAll(async () => {
  fx = await startRegistryFixture();
  base = fx.registry.url;
});
afterAll(async () => {
  await fx?.close();
});

describe('schema registry REST API', () => {
  it('registers, looks up, lists versions and serves schemas by id', async () => {
    const reg = await sr(base, 'POST', '/subjects/users-value/versions', { schema: JSON.stringify(userV1) });
    expect(reg.status).toBe(200);
    expect(reg.contentType).toContain(SR_CONTENT_TYPE);
    const id = reg.body.id as number;
    expect(id).toBeGreaterThan(0);

    // idempotent: the same schema (even formatted differently, keys reordered) → the same id, no new version
    const again = await sr(base, 'POST', '/subjects/users-value/versions', {
      schema: JSON.stringify({ fields: userV1.fields, namespace: 'test.sr', name: 'User', type: 'record' }, null, 2),
    });
    expect(again.body).toEqual({ id });
    expect((await sr(base, 'GET', '/subjects/users-value/versions')).body).toEqual([1]);

    const lookup = await sr(base, 'POST', '/subjects/users-value', { schema: JSON.stringify(userV1) });
    expect(lookup.status).toBe(200);
    expect(lookup.body).toMatchObject({ subject: 'users-value', id, version: 1 });
    expect(JSON.parse(lookup.body.schema)).toEqual(userV1);

    const v1 = await sr(base, 'GET', '/subjects/users-value/versions/1');
    expect(v1.body).toMatchObject({ subject: 'users-value', version: 1, id });
    expect((await sr(base, 'GET', '/subjects/users-value/versions/latest')).body.version).toBe(1);
    expect((await sr(base, 'GET', '/subjects/users-value/versions/1/schema')).body).toEqual(userV1);

    const byId = await sr(base, 'GET', `/schemas/ids/${id}`);
    expect(byId.status).toBe(200);
    expect(JSON.parse(byId.body.schema)).toEqual(userV1);
    expect((await sr(base, 'GET', `/schemas/ids/${id}/schema`)).body).toEqual(userV1);
    expect((await sr(base, 'GET', `/schemas/ids/${id}/versions`)).body).toEqual([
      { subject: 'users-value', version: 1 },
    ]);
    expect((await sr(base, 'GET', '/subjects')).body).toContain('users-value');
    expect((await sr(base, 'GET', '/schemas/types')).body).toEqual(['AVRO']);
  });

  it('gives one global id to one schema across subjects, new ids to new schemas', async () => {
    const a = await sr(base, 'POST', '/subjects/shared-a-value/versions', { schema: '"string"' });
    const b = await sr(base, 'POST', '/subjects/shared-b-value/versions', { schema: '"string"' });
    expect(a.body.id).toBe(b.body.id);
    const c = await sr(base, 'POST', '/subjects/shared-c-value/versions', { schema: '"long"' });
    expect(c.body.id).toBeGreaterThan(a.body.id);
    expect((await sr(base, 'GET', `/schemas/ids/${a.body.id}/versions`)).body).toEqual([
      { subject: 'shared-a-value', version: 1 },
      { subject: 'shared-b-value', version: 1 },
    ]);
  });

  it('refuses an incompatible schema with 409 and accepts a compatible evolution (BACKWARD default)', async () => {
    await sr(base, 'POST', '/subjects/evolve-value/versions', { schema: JSON.stringify(userV1) });
    const bad = await sr(base, 'POST', '/subjects/evolve-value/versions', { schema: JSON.stringify(userNoDefault) });
    expect(bad.status).toBe(409);
    expect(bad.body.error_code).toBe(409);
    expect(bad.body.message).toMatch(/incompatible/);
    const badType = await sr(base, 'POST', '/subjects/evolve-value/versions', {
      schema: JSON.stringify(userAgeString),
    });
    expect(badType.status).toBe(409);

    const test = await sr(base, 'POST', '/compatibility/subjects/evolve-value/versions/latest?verbose=true', {
      schema: JSON.stringify(userNoDefault),
    });
    expect(test.status).toBe(200);
    expect(test.body.is_compatible).toBe(false);
    expect(test.body.messages.join(' ')).toMatch(/country/);
    expect(
      (
        await sr(base, 'POST', '/compatibility/subjects/evolve-value/versions/latest', {
          schema: JSON.stringify(userV2),
        })
      ).body,
    ).toEqual({ is_compatible: true });

    const ok = await sr(base, 'POST', '/subjects/evolve-value/versions', { schema: JSON.stringify(userV2) });
    expect(ok.status).toBe(200);
    expect((await sr(base, 'GET', '/subjects/evolve-value/versions')).body).toEqual([1, 2]);
    expect((await sr(base, 'GET', '/subjects/evolve-value/versions/latest')).body.id).toBe(ok.body.id);
  });

  it('applies the configured compatibility level per subject (FORWARD, FULL, NONE, transitive)', async () => {
    expect((await sr(base, 'GET', '/config')).body).toEqual({ compatibilityLevel: 'BACKWARD' });
    const none = await sr(base, 'GET', '/config/levels-value');
    expect(none.status).toBe(404);
    expect(none.body.error_code).toBe(40408);
    expect((await sr(base, 'GET', '/config/levels-value?defaultToGlobal=true')).body).toEqual({
      compatibilityLevel: 'BACKWARD',
    });

    const bad = await sr(base, 'PUT', '/config/levels-value', { compatibility: 'SIDEWAYS' });
    expect(bad.status).toBe(422);
    expect(bad.body.error_code).toBe(42203);

    expect((await sr(base, 'PUT', '/config/levels-value', { compatibility: 'FORWARD' })).body).toEqual({
      compatibility: 'FORWARD',
    });
    expect((await sr(base, 'GET', '/config/levels-value')).body).toEqual({ compatibilityLevel: 'FORWARD' });
    await sr(base, 'POST', '/subjects/levels-value/versions', { schema: JSON.stringify(userV2) });
    // FORWARD: old readers must read new data; dropping `email` (it has a default) is fine for them
    expect((await sr(base, 'POST', '/subjects/levels-value/versions', { schema: JSON.stringify(userV1) })).status).toBe(
      200,
    );
    // a new required field is FORWARD compatible (old readers ignore it), but not BACKWARD
    expect(
      (await sr(base, 'POST', '/subjects/levels-value/versions', { schema: JSON.stringify(userNoDefault) })).status,
    ).toBe(200);

    await sr(base, 'PUT', '/config/levels-value', { compatibility: 'FULL_TRANSITIVE' });
    // userAgeString cannot be read by / read any earlier version
    expect(
      (await sr(base, 'POST', '/subjects/levels-value/versions', { schema: JSON.stringify(userAgeString) })).status,
    ).toBe(409);

    await sr(base, 'PUT', '/config/levels-value', { compatibility: 'NONE' });
    expect(
      (await sr(base, 'POST', '/subjects/levels-value/versions', { schema: JSON.stringify(userAgeString) })).status,
    ).toBe(200);

    expect((await sr(base, 'DELETE', '/config/levels-value')).body).toEqual({ compatibilityLevel: 'NONE' });
    expect((await sr(base, 'GET', '/config/levels-value')).status).toBe(404);

    // BACKWARD_TRANSITIVE checks every live version, BACKWARD only the latest
    await sr(base, 'PUT', '/config/transitive-value', { compatibility: 'NONE' });
    await sr(base, 'POST', '/subjects/transitive-value/versions', { schema: JSON.stringify(userAgeString) });
    await sr(base, 'POST', '/subjects/transitive-value/versions', { schema: JSON.stringify(userV1) });
    await sr(base, 'PUT', '/config/transitive-value', { compatibility: 'BACKWARD' });
    expect(
      (await sr(base, 'POST', '/compatibility/subjects/transitive-value/versions', { schema: JSON.stringify(userV2) }))
        .body,
    ).toEqual({
      is_compatible: true,
    });
    await sr(base, 'PUT', '/config/transitive-value', { compatibility: 'BACKWARD_TRANSITIVE' });
    expect(
      (await sr(base, 'POST', '/subjects/transitive-value/versions', { schema: JSON.stringify(userV2) })).status,
    ).toBe(409);
  });

  it('answers bad input with Confluent error codes, never a 5xx', async () => {
    const cases: [string, string, unknown, number, number][] = [
      ['GET', '/subjects/nope-value/versions', undefined, 404, 40401],
      ['GET', '/subjects/nope-value/versions/1', undefined, 404, 40401],
      ['GET', '/subjects/users-value/versions/99', undefined, 404, 40402],
      ['GET', '/subjects/users-value/versions/zero', undefined, 422, 42202],
      ['GET', '/subjects/users-value/versions/0', undefined, 422, 42202],
      ['GET', '/schemas/ids/999999', undefined, 404, 40403],
      ['GET', '/schemas/ids/abc', undefined, 404, 40403],
      ['POST', '/subjects/users-value', { schema: '"bytes"' }, 404, 40403],
      ['POST', '/subjects/nope-value', { schema: '"bytes"' }, 404, 40401],
      ['POST', '/subjects/x-value/versions', { schema: '{"type":"record","name":"R"}' }, 422, 42201],
      ['POST', '/subjects/x-value/versions', { schema: 'not json' }, 422, 42201],
      ['POST', '/subjects/x-value/versions', { schema: '{"type":"nosuchtype"}' }, 422, 42201],
      ['POST', '/subjects/x-value/versions', {}, 422, 42201],
      ['POST', '/subjects/x-value/versions', { schema: 42 }, 422, 42201],
      ['POST', '/subjects/x-value/versions', { schema: '"string"', schemaType: 'PROTOBUF' }, 422, 42201],
      ['PUT', '/config', { compatibility: 'bogus' }, 422, 42203],
      ['PUT', '/config', {}, 422, 42203],
      ['GET', '/no/such/route', undefined, 404, 404],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await sr(base, method, path, body);
      expect({ method, path, status: r.status, code: r.body?.error_code }).toEqual({ method, path, status, code });
      expect(typeof r.body.message).toBe('string');
    }
    const malformed = await fetch(`${base}/subjects/x-value/versions`, {
      method: 'POST',
      headers: { 'content-type': SR_CONTENT_TYPE },
      body: '{"schema": ',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error_code: number }).error_code).toBe(400);
    const huge = await fetch(`${base}/subjects/x-value/versions`, {
      method: 'POST',
      headers: { 'content-type': SR_CONTENT_TYPE },
      body: JSON.stringify({
        schema: JSON.stringify({ type: 'enum', name: 'E', symbols: ['A'], doc: 'x'.repeat(5 * 1024 * 1024) }),
      }),
    });
    expect(huge.status).toBe(413);
  });

  it('soft-deletes and permanently deletes versions and subjects like Confluent', async () => {
    const s = 'deleting-value';
    // schemas used by no other subject, so that a permanent delete removes their ids
    const delV1 = { ...userV1, namespace: 'test.deleting' };
    const delV2 = { ...userV2, namespace: 'test.deleting' };
    const { body: r1 } = await sr(base, 'POST', `/subjects/${s}/versions`, { schema: JSON.stringify(delV1) });
    await sr(base, 'POST', `/subjects/${s}/versions`, { schema: JSON.stringify(delV2) });
    expect((await sr(base, 'DELETE', `/subjects/${s}/versions/1?permanent=true`)).body.error_code).toBe(40407);
    expect((await sr(base, 'DELETE', `/subjects/${s}/versions/1`)).body).toBe(1);
    expect((await sr(base, 'DELETE', `/subjects/${s}/versions/1`)).body.error_code).toBe(40406);
    expect((await sr(base, 'GET', `/subjects/${s}/versions`)).body).toEqual([2]);
    expect((await sr(base, 'GET', `/subjects/${s}/versions?deleted=true`)).body).toEqual([1, 2]);
    expect((await sr(base, 'GET', `/subjects/${s}/versions/1`)).body.error_code).toBe(40402);
    expect((await sr(base, 'GET', `/subjects/${s}/versions/1?deleted=true`)).body.version).toBe(1);
    // a soft-deleted schema's id still resolves: old messages stay readable
    expect((await sr(base, 'GET', `/schemas/ids/${r1.id}`)).status).toBe(200);

    expect((await sr(base, 'DELETE', `/subjects/${s}?permanent=true`)).body.error_code).toBe(40405);
    expect((await sr(base, 'DELETE', `/subjects/${s}`)).body).toEqual([2]);
    expect((await sr(base, 'GET', '/subjects')).body).not.toContain(s);
    expect((await sr(base, 'GET', '/subjects?deleted=true')).body).toContain(s);
    expect((await sr(base, 'DELETE', `/subjects/${s}`)).body.error_code).toBe(40404);
    expect((await sr(base, 'DELETE', `/subjects/${s}?permanent=true`)).body).toEqual([1, 2]);
    expect((await sr(base, 'GET', '/subjects?deleted=true')).body).not.toContain(s);
    expect((await sr(base, 'GET', `/schemas/ids/${r1.id}`)).body.error_code).toBe(40403);

    // ids are never reused, even after a permanent delete
    const fresh = await sr(base, 'POST', `/subjects/${s}/versions`, {
      schema: JSON.stringify({ type: 'fixed', name: 'F', size: 3 }),
    });
    expect(fresh.body.id).toBeGreaterThan(r1.id);
  });
});

describe('clients', () => {
  it('@kafkajs/confluent-schema-registry registers, encodes and decodes against it', async () => {
    const client = new SchemaRegistry({ host: base });
    const { id } = await client.register(
      { type: 'AVRO' as never, schema: JSON.stringify(userV1) },
      { subject: 'kjs-value' },
    );
    expect(id).toBeGreaterThan(0);
    // the client set the subject's compatibility on first registration, through PUT /config/{subject}
    expect((await sr(base, 'GET', '/config/kjs-value')).body).toEqual({ compatibilityLevel: 'BACKWARD' });
    expect(await client.getLatestSchemaId('kjs-value')).toBe(id);
    const buf = await client.encode(id, { id: 'u1', age: 42 });
    expect(buf[0]).toBe(0);
    expect(buf.readUInt32BE(1)).toBe(id);
    // a fresh client has to fetch the schema by id from the registry
    expect(await new SchemaRegistry({ host: base }).decode(buf)).toEqual({ id: 'u1', age: 42 });

    // our codec decodes what the Confluent client wrote, and the other way round
    const codec = createValueCodec({ registryUrl: base });
    expect((await codec.decode(buf)).value).toEqual({ id: 'u1', age: 42 });
    await codec.register('kjs', userV2);
    const ours = codec.encode('kjs', { id: 'u2', age: 7, email: 'a@b.c' });
    expect(await new SchemaRegistry({ host: base }).decode(ours)).toEqual({ id: 'u2', age: 7, email: 'a@b.c' });
  });

  it('lets a consumer holding the OLD schema read new data, and a new consumer read old data with defaults', async () => {
    const producerV1 = createValueCodec({ registryUrl: base });
    const producerV3 = createValueCodec({ registryUrl: base });
    const idV1 = await producerV1.register('evo', userV1);
    const idV3 = await producerV3.register('evo', userV3);
    expect(idV3).not.toBe(idV1);
    const oldData = producerV1.encode('evo', { id: 'old', age: 1 });
    const newData = producerV3.encode('evo', { id: 'new', age: 2, email: 'n@x.y', tier: 'gold' });

    const oldConsumer = createValueCodec({ registryUrl: base });
    oldConsumer.useReaderSchema('evo', userV1);
    const decodedNew = await oldConsumer.decode(newData, 'evo');
    expect(decodedNew.schemaId).toBe(idV3);
    expect({ ...(decodedNew.value as object) }).toEqual({ id: 'new', age: 2 });

    const newConsumer = createValueCodec({ registryUrl: base });
    newConsumer.useReaderSchema('evo', userV3);
    const decodedOld = await newConsumer.decode(oldData, 'evo');
    expect(decodedOld.schemaId).toBe(idV1);
    expect({ ...(decodedOld.value as object) }).toEqual({ id: 'old', age: 1, email: null, tier: 'basic' });
  });
});

describe('state in the _schemas topic', () => {
  it('survives a restart: a new instance on the same topic serves the same ids, versions and config', async () => {
    const subjects = ((await sr(base, 'GET', '/subjects?deleted=true')).body as string[]).sort();
    const snapshot: Record<string, unknown> = {};
    for (const s of subjects) {
      const versions = (await sr(base, 'GET', `/subjects/${s}/versions?deleted=true`)).body as number[];
      snapshot[s] = await Promise.all(
        versions.map(async (v) => (await sr(base, 'GET', `/subjects/${s}/versions/${v}?deleted=true`)).body),
      );
    }
    const evolveConfig = (await sr(base, 'GET', '/config/transitive-value')).body;
    const maxId = fx.registry.state.stats().maxId;
    await fx.registry.close();

    const second = await fx.startRegistry();
    const b2 = second.url;
    expect(((await sr(b2, 'GET', '/subjects?deleted=true')).body as string[]).sort()).toEqual(subjects);
    for (const s of subjects) {
      const versions = (await sr(b2, 'GET', `/subjects/${s}/versions?deleted=true`)).body as number[];
      const rebuilt = await Promise.all(
        versions.map(async (v) => (await sr(b2, 'GET', `/subjects/${s}/versions/${v}?deleted=true`)).body),
      );
      expect(rebuilt).toEqual(snapshot[s]);
    }
    expect((await sr(b2, 'GET', '/config/transitive-value')).body).toEqual(evolveConfig);
    // registering an existing schema again is still idempotent, and a new one continues the id sequence
    expect((await sr(b2, 'POST', '/subjects/users-value/versions', { schema: JSON.stringify(userV1) })).body.id).toBe(
      (snapshot['users-value'] as { id: number }[])[0].id,
    );
    const next = await sr(b2, 'POST', '/subjects/after-restart-value/versions', { schema: '"double"' });
    expect(next.body.id).toBe(maxId + 1);
    base = b2;
    fx.registry = second;
  });

  it('keeps Confluent-style keyed records in the compacted topic', async () => {
    const consumer = fx.kafka.consumer({ groupId: `sr-test-reader-${Date.now()}`, maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topic: fx.topic, fromBeginning: true });
    const records: { key: any; value: any }[] = [];
    const admin = fx.kafka.admin();
    await admin.connect();
    const [{ high }] = await admin.fetchTopicOffsets(fx.topic);
    await admin.disconnect();
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          records.push({
            key: JSON.parse(message.key!.toString()),
            value: message.value ? JSON.parse(message.value.toString()) : null,
          });
          if (Number(message.offset) >= Number(high) - 1) resolve();
        },
      });
    });
    await consumer.disconnect();
    const usersV1 = records.find(
      (r) => r.key.keytype === 'SCHEMA' && r.key.subject === 'users-value' && r.key.version === 1,
    );
    expect(usersV1?.key).toEqual({ keytype: 'SCHEMA', subject: 'users-value', version: 1, magic: 1 });
    expect(usersV1?.value).toMatchObject({ subject: 'users-value', version: 1, deleted: false });
    expect(JSON.parse(usersV1?.value.schema)).toEqual(userV1);
    expect(records.some((r) => r.key.keytype === 'CONFIG' && r.key.subject === 'transitive-value')).toBe(true);
    expect(records.some((r) => r.key.keytype === 'ID_WATERMARK')).toBe(true);
    // the permanently deleted subject left tombstones
    expect(records.some((r) => r.key.subject === 'deleting-value' && r.value === null)).toBe(true);
  });

  it('refuses to run on an existing state topic that is not compacted', async () => {
    const admin = fx.kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: '_schemas_deleting', numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    await expect(startSchemaRegistry({ kafka: fx.kafka, topic: '_schemas_deleting', port: 0 })).rejects.toThrow(
      /cleanup.policy=delete/,
    );
  });
});
