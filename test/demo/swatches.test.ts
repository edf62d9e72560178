// The demo store carries colour swatches: one shopify--color-pattern metaobject per colour (the patterned
// colours with an image swatch whose image the demo serves), every product references its colours'
// metaobjects from the metafield shopify.color-pattern, and the demo's own catalog lines, taken through
// the bulk import's normalization and the catalog_metaobjects processor into a private chDB database,
// give the read API the swatches and resolve every product's references.
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { allMetaobjects, metaobjectsByIds } from '../../clickhouse/queries/index.ts';
import type { CatalogMetaobject } from '../../schemas/catalog.ts';
import { recordsForImport } from '../../services/catalog/importer.ts';
import { normalizeProduct } from '../../services/catalog/normalize.ts';
import { generateDemoStore, IMAGE_SIZE } from '../../services/demo/generator/generator.ts';
import { parseImageName, renderImage } from '../../services/demo/generator/images.ts';
import { catalogLines } from '../../services/demo/generator/load.ts';
import { COLORS } from '../../services/demo/generator/vocab.ts';
import { catalogMetaobjectsProcessor } from '../../streams/catalog/index.ts';
import type { Decoded } from '../../streams/runtime/types.ts';
import { privateDb } from '../helpers/chdb.ts';

const now = '2026-06-01T00:00:00.000Z';
const store = generateDemoStore({ seed: 'swatches', products: 300, sessions: 50 });
const STORE_ID = 'demo-swatches';

/** the demo's metaobject records, as the bulk import (and so the demo loader) produces them */
function metaobjectRecords(): CatalogMetaobject[] {
  const out: CatalogMetaobject[] = [];
  for (const line of catalogLines(store)) {
    if (line.type !== 'metaobject') continue;
    const r = recordsForImport(STORE_ID, line, now);
    if (!r.ok) throw new Error(`${String(line.handle)}: ${JSON.stringify(r.issues)}`);
    for (const rec of r.records) {
      expect(rec.topic).toBe('metaobjects');
      out.push(rec.value as CatalogMetaobject);
    }
  }
  return out;
}

describe('demo swatch metaobjects', () => {
  it('one color-pattern metaobject per colour: handle = slug, display name = name, a hex colour swatch', () => {
    const records = metaobjectRecords();
    expect(records.map((m) => m.handle)).toEqual(COLORS.map((c) => c.slug));
    for (const [i, c] of COLORS.entries()) {
      const m = records[i];
      expect(m).toMatchObject({ type: 'shopify--color-pattern', display_name: c.name, source: 'import' });
      expect(m.fields).toMatchObject({ label: c.name, color: c.hex });
      if (c.swatchPattern === undefined)
        expect(m.swatch).toEqual({ type: 'color', colors: [c.hex], url: null, alt: null });
    }
    // the patterned colours show an image swatch, served by the demo's image route
    const images = records.filter((m) => m.swatch?.type === 'image');
    expect(images.map((m) => m.handle)).toEqual(['navy', 'olive']);
    for (const m of images) {
      const url = String(m.swatch?.url);
      expect(url.startsWith(`${store.options.imageBaseUrl}/swatch-${m.handle}-`)).toBe(true);
      expect(parseImageName(url.split('/').at(-1) as string)).toMatchObject({ type: 'swatch', color: m.handle });
      expect(m.swatch?.alt).toMatch(new RegExp(`^${m.display_name} `));
    }
  });

  it('a swatch image is a real PNG of the colour', async () => {
    const png = await renderImage({ type: 'swatch', color: 'olive', pattern: 2 });
    const meta = await sharp(png).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', IMAGE_SIZE, IMAGE_SIZE]);
    const raw = await sharp(png).removeAlpha().raw().toBuffer();
    // a corner pixel is the olive ground (the dots sit in the middle of each tile)
    expect([raw[0], raw[1], raw[2]]).toEqual([0x6b, 0x7a, 0x3a]);
  });

  it("every product's shopify.color-pattern metafield lists its colours' metaobject GIDs", () => {
    const byGid = new Map(store.metaobjects.map((m) => [`gid://shopify/Metaobject/${m.id}`, m]));
    for (let i = 0; i < store.productCount; i++) {
      const r = normalizeProduct(STORE_ID, store.product(i), { source: 'import', now });
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      const refs = r.value.product.metafields.shopify?.['color-pattern'] as string[];
      expect(refs.map((g) => byGid.get(g)?.handle)).toEqual(store.meta(i).colors.map((c) => c.slug));
    }
  });
});

describe('demo swatches through the projection', () => {
  let db: Db;
  beforeAll(async () => {
    db = await privateDb(`demo_swatches_${process.pid}`);
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('the loaded metaobjects resolve every product reference, with their swatches', async () => {
    const records = metaobjectRecords();
    const batch = records.map(
      (m, k): Decoded<unknown> => ({
        value: { op: 'upsert', record: m },
        position: { topic: 'metaobjects', partition: 0, offset: BigInt(k) },
        brokerTime: Date.parse(now),
        tombstone: false,
      }),
    );
    const result = await catalogMetaobjectsProcessor.process(batch as never, {} as never);
    for (const w of result.writes) await db.insert(w.table, w.rows, { dedupToken: `demo-swatches/${w.table}` });

    const all = await allMetaobjects(db, STORE_ID, { type: 'shopify--color-pattern' });
    expect(all).toHaveLength(COLORS.length);
    expect(all.find((m) => m.handle === 'red')?.swatch).toEqual({ type: 'color', colors: ['#c0392b'] });
    expect(all.find((m) => m.handle === 'navy')?.swatch).toMatchObject({ type: 'image', alt: 'Navy stripe pattern' });

    const product = normalizeProduct(STORE_ID, store.product(0), { source: 'import', now });
    if (!product.ok) throw new Error('bad product');
    const refs = product.value.product.metafields.shopify['color-pattern'] as string[];
    const resolved = await metaobjectsByIds(db, STORE_ID, refs);
    expect(resolved.map((m) => m.gid).sort()).toEqual([...refs].sort());
    expect(resolved.every((m) => m.swatch !== null)).toBe(true);
  });
});
