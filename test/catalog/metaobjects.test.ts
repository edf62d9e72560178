// Metaobjects end to end without the stack: Shopify payloads (webhook record form, GraphQL field list,
// bulk-import lines) normalize into catalog.metaobjects.v1 records with a swatch derived from the
// color-pattern fields; the records survive Avro; the catalog_metaobjects processor projects upserts and
// tombstones into a private chDB database (versioned: an older update never wins); the query helpers
// return the swatches the read API shows as facetDisplay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { allMetaobjects, metaobjectsByIds } from '../../clickhouse/queries/index.ts';
import { avroType } from '../../schemas/avro/logical-types.ts';
import {
  CATALOG_AVRO,
  type CatalogMetaobject,
  CatalogMetaobjectSchema,
  catalogKey,
  parseCatalogKey,
} from '../../schemas/catalog.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { recordsForImport } from '../../services/catalog/importer.ts';
import { hexColor, normalizeMetaobject } from '../../services/catalog/normalize.ts';
import { recordsForTopic } from '../../services/catalog/webhooks.ts';
import { catalogMetaobjectsProcessor } from '../../streams/catalog/index.ts';
import { PROCESSORS } from '../../streams/registry.ts';
import type { Decoded } from '../../streams/runtime/types.ts';
import { privateDb } from '../helpers/chdb.ts';

const now = '2026-01-01T00:00:00.000Z';
const opts = { source: 'webhook' as const, now };

/** a metaobjects/update webhook body as Shopify sends it (fields as key → value strings) */
const webhookRed = (over: Record<string, unknown> = {}) => ({
  id: 'gid://shopify/Metaobject/4182966',
  type: 'shopify--color-pattern',
  handle: 'red',
  display_name: 'Red',
  created_at: '2024-03-01T10:00:00Z',
  updated_at: '2024-03-02T10:00:00Z',
  fields: {
    label: 'Red',
    color: '#C0392B',
    color_taxonomy_reference: 'gid://shopify/TaxonomyValue/2',
    pattern_taxonomy_reference: 'gid://shopify/TaxonomyValue/2874',
  },
  ...over,
});

/** the same kind of object from the GraphQL Admin API: a field list with types and resolved references */
const graphqlStriped = () => ({
  id: 'gid://shopify/Metaobject/4182967',
  type: 'shopify--color-pattern',
  handle: 'navy-stripe',
  displayName: 'Navy Stripe',
  updatedAt: '2024-03-03T10:00:00Z',
  fields: [
    { key: 'label', value: 'Navy Stripe', type: 'single_line_text_field' },
    { key: 'color', value: '["#1f3a5f","#FAFAFA"]', type: 'list.color' },
    {
      key: 'image',
      value: 'gid://shopify/MediaImage/55501',
      type: 'file_reference',
      reference: {
        image: { url: 'https://cdn.example.com/swatches/navy-stripe.png', altText: 'Navy and white stripes' },
      },
    },
    { key: 'pattern_taxonomy_reference', value: 'gid://shopify/TaxonomyValue/2875', type: 'metaobject_reference' },
  ],
});

function normalized(raw: unknown, store = 'store-m'): CatalogMetaobject {
  const r = normalizeMetaobject(store, raw, opts);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.value;
}

describe('metaobject normalization', () => {
  it('a webhook payload becomes the record: gid → digits, fields kept as given, a colour swatch', () => {
    expect(normalized(webhookRed())).toEqual({
      store_id: 'store-m',
      metaobject_id: '4182966',
      type: 'shopify--color-pattern',
      handle: 'red',
      display_name: 'Red',
      fields: {
        label: 'Red',
        color: '#C0392B',
        color_taxonomy_reference: 'gid://shopify/TaxonomyValue/2',
        pattern_taxonomy_reference: 'gid://shopify/TaxonomyValue/2874',
      },
      swatch: { type: 'color', colors: ['#c0392b'], url: null, alt: null },
      updated_at: '2024-03-02T10:00:00.000Z',
      source: 'webhook',
    });
  });

  it('a GraphQL field list: JSON-typed values parsed, references kept as GIDs, the image wins over the colours', () => {
    const m = normalized(graphqlStriped());
    expect(m).toMatchObject({
      metaobject_id: '4182967',
      handle: 'navy-stripe',
      display_name: 'Navy Stripe',
      updated_at: '2024-03-03T10:00:00.000Z',
      fields: {
        label: 'Navy Stripe',
        color: ['#1f3a5f', '#FAFAFA'],
        image: 'gid://shopify/MediaImage/55501',
        pattern_taxonomy_reference: 'gid://shopify/TaxonomyValue/2875',
      },
      swatch: {
        type: 'image',
        colors: [],
        url: 'https://cdn.example.com/swatches/navy-stripe.png',
        alt: 'Navy and white stripes',
      },
    });
    // without the image: both colours (a two-colour swatch)
    const plain = graphqlStriped();
    plain.fields = plain.fields.filter((f) => f.key !== 'image');
    expect(normalized(plain).swatch).toEqual({ type: 'color', colors: ['#1f3a5f', '#fafafa'], url: null, alt: null });
  });

  it('swatch edge cases: an unresolved file GID falls back to the colour, a URL image is used, no colour → null', () => {
    const unresolved = normalized(webhookRed({ fields: { color: '#abc', image: 'gid://shopify/MediaImage/1' } }));
    expect(unresolved.swatch).toEqual({ type: 'color', colors: ['#aabbcc'], url: null, alt: null });
    const url = normalized(webhookRed({ fields: { label: 'Leopard', image: 'https://cdn.example.com/leopard.png' } }));
    expect(url.swatch).toEqual({ type: 'image', colors: [], url: 'https://cdn.example.com/leopard.png', alt: 'Red' });
    const none = normalized(
      webhookRed({ type: 'lookbook', handle: 'summer', display_name: null, fields: { title: 'Summer' } }),
    );
    expect([none.swatch, none.display_name, none.type]).toEqual([null, 'summer', 'lookbook']);
    expect(['#FFF', 'ff0000', '#12345678', 'red', '#12', 42].map(hexColor)).toEqual([
      '#ffffff',
      '#ff0000',
      '#12345678',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('bad payloads are field issues, never throws', () => {
    const r1 = normalizeMetaobject('s', { ...webhookRed(), id: 'gid://shopify/Product/1' }, opts);
    expect(r1.ok || r1.issues.map((i) => i.path)).toEqual(['id']);
    const { type: _type, ...untyped } = webhookRed();
    const r2 = normalizeMetaobject('s', untyped, opts);
    expect(r2.ok || r2.issues.map((i) => i.path)).toEqual(['type']);
    const r3 = normalizeMetaobject('s', { ...webhookRed(), handle: '' }, opts);
    expect(r3.ok || r3.issues.map((i) => i.path)).toEqual(['handle']);
  });

  it('the record survives Avro, and its key round-trips', () => {
    const m = normalized(graphqlStriped());
    const type = avroType(CATALOG_AVRO.metaobjects);
    expect(CatalogMetaobjectSchema.parse(type.fromBuffer(type.toBuffer(m)))).toEqual(m);
    const key = catalogKey({ topic: 'metaobjects', store_id: 's-1', metaobject_id: '4182967' });
    expect(key).toBe('s-1:metaobject:4182967');
    expect(parseCatalogKey('metaobjects', key)).toEqual({
      topic: 'metaobjects',
      store_id: 's-1',
      metaobject_id: '4182967',
    });
    expect(parseCatalogKey('metaobjects', 's-1:4182967')).toBeUndefined();
    expect(TOPICS.metaobjects).toMatchObject({
      name: 'catalog.metaobjects.v1',
      cleanupPolicy: 'compact',
      partitions: 1,
    });
  });
});

describe('metaobject ingestion', () => {
  it('webhooks metaobjects/create|update produce the record, metaobjects/delete a tombstone', () => {
    for (const topic of ['metaobjects/create', 'metaobjects/update'] as const) {
      const r = recordsForTopic(topic, 'store-w', webhookRed(), now);
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      expect(r.records.map((x) => [x.topic, x.key, (x.value as CatalogMetaobject).handle])).toEqual([
        ['metaobjects', 'store-w:metaobject:4182966', 'red'],
      ]);
      expect(r.records[0].versionMs).toBe(Date.parse('2024-03-02T10:00:00Z'));
    }
    const del = recordsForTopic(
      'metaobjects/delete',
      'store-w',
      { id: 'gid://shopify/Metaobject/4182966', type: 'shopify--color-pattern', handle: 'red' },
      now,
    );
    expect(del.ok && del.records.map((x) => [x.topic, x.key, x.value])).toEqual([
      ['metaobjects', 'store-w:metaobject:4182966', null],
    ]);
    const bad = recordsForTopic('metaobjects/update', 'store-w', { id: 1, handle: 'x' }, now);
    expect(bad.ok || bad.issues.map((i) => i.path)).toEqual(['type']);
  });

  it('bulk import lines: `metaobject` with its own type in metaobject_type; `deleted: true` is a tombstone', () => {
    const { type, ...rest } = webhookRed();
    const r = recordsForImport('store-i', { ...rest, type: 'metaobject', metaobject_type: type }, now);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.records).toHaveLength(1);
    expect(r.records[0].value).toMatchObject({
      type: 'shopify--color-pattern',
      handle: 'red',
      source: 'import',
      swatch: { type: 'color', colors: ['#c0392b'] },
    });
    const d = recordsForImport('store-i', { type: 'metaobject', id: 4182966, deleted: true }, now);
    expect(d.ok && d.records.map((x) => [x.key, x.value])).toEqual([['store-i:metaobject:4182966', null]]);
    const missing = recordsForImport('store-i', { ...rest, type: 'metaobject' }, now);
    expect(missing.ok || missing.issues.map((i) => i.path)).toEqual(['type']);
  });
});

describe('metaobject projection', () => {
  let db: Db;
  let offset = 0n;
  const store = 'proj-metaobjects';

  beforeAll(async () => {
    db = await privateDb(`catalog_meta_${process.pid}`);
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
  });

  /** messages through Avro, the processor and the insert as the runtime hands them over (one chunk) */
  async function deliver(msgs: ({ value: CatalogMetaobject } | { tombstone: string })[], brokerTime = Date.now()) {
    const p = catalogMetaobjectsProcessor;
    const type = avroType(CATALOG_AVRO.metaobjects);
    const first = offset;
    const batch: Decoded<unknown>[] = [];
    for (const m of msgs) {
      const parsed =
        'tombstone' in m
          ? p.parseTombstone(Buffer.from(m.tombstone))
          : p.parse(type.fromBuffer(type.toBuffer(m.value)));
      if (!parsed.ok) throw new Error(parsed.reason);
      batch.push({
        value: parsed.value,
        position: { topic: 'metaobjects', partition: 0, offset },
        brokerTime,
        tombstone: 'tombstone' in m,
      });
      offset++;
    }
    const result = await p.process(batch as never, {} as never);
    for (const w of result.writes)
      await db.insert(w.table, w.rows, { dedupToken: `metaobjects/0/${first}-${offset - 1n}/${w.table}` });
  }

  it('is registered as a processor of catalog.metaobjects.v1', () => {
    expect(PROCESSORS.catalog_metaobjects).toBe(catalogMetaobjectsProcessor);
    expect(catalogMetaobjectsProcessor.topic).toBe('metaobjects');
  });

  it('upserts reach the table and the query helpers return the swatches; an older update never wins', async () => {
    const red = normalized(webhookRed(), store);
    const striped = normalized(graphqlStriped(), store);
    await deliver([{ value: red }, { value: striped }]);
    const all = await allMetaobjects(db, store);
    expect(all).toEqual([
      {
        id: '4182966',
        gid: 'gid://shopify/Metaobject/4182966',
        type: 'shopify--color-pattern',
        handle: 'red',
        display_name: 'Red',
        fields: red.fields,
        swatch: { type: 'color', colors: ['#c0392b'] },
        updated_at: '2024-03-02T10:00:00.000Z',
      },
      {
        id: '4182967',
        gid: 'gid://shopify/Metaobject/4182967',
        type: 'shopify--color-pattern',
        handle: 'navy-stripe',
        display_name: 'Navy Stripe',
        fields: striped.fields,
        swatch: {
          type: 'image',
          url: 'https://cdn.example.com/swatches/navy-stripe.png',
          alt: 'Navy and white stripes',
        },
        updated_at: '2024-03-03T10:00:00.000Z',
      },
    ]);
    expect(
      (await metaobjectsByIds(db, store, ['gid://shopify/Metaobject/4182967', '999', 'x'])).map((m) => m.handle),
    ).toEqual(['navy-stripe']);
    expect(await allMetaobjects(db, store, { type: 'lookbook' })).toEqual([]);
    expect(await allMetaobjects(db, 'another-store')).toEqual([]);

    // a newer update replaces; a late older one (delivered after it) does not
    const crimson = normalized(
      webhookRed({ display_name: 'Crimson', updated_at: '2024-03-05T10:00:00Z', fields: { color: '#990000' } }),
      store,
    );
    const stale = normalized(webhookRed({ display_name: 'Old red', updated_at: '2024-03-01T00:00:00Z' }), store);
    await deliver([{ value: crimson }]);
    await deliver([{ value: stale }]);
    const [now1] = await metaobjectsByIds(db, store, ['4182966']);
    expect([now1.display_name, now1.swatch]).toEqual(['Crimson', { type: 'color', colors: ['#990000'] }]);
  });

  it('a tombstone removes the metaobject', async () => {
    await deliver([{ tombstone: catalogKey({ topic: 'metaobjects', store_id: store, metaobject_id: '4182966' }) }]);
    expect((await allMetaobjects(db, store)).map((m) => m.handle)).toEqual(['navy-stripe']);
    expect(await metaobjectsByIds(db, store, ['4182966'])).toEqual([]);
    const rows = await db.query<{ n: string }>(
      'SELECT toString(count()) AS n FROM catalog_metaobjects_current WHERE store_id = {store:String}',
      { store },
    );
    expect(rows[0].n).toBe('1');
  });

  it('a key this platform never writes is refused (dead-lettered by the runtime)', () => {
    const r = catalogMetaobjectsProcessor.parseTombstone(Buffer.from('proj-metaobjects:product:1'));
    expect(r.ok).toBe(false);
  });
});
