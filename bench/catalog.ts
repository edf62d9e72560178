// Catalog figures: normalization and Avro encoding per product (baseline: JSON.parse of the same
// payload), projection write throughput into chDB, and the read-path query helpers over a store of
// N products (own chDB directory; no Kafka needed).   node bench/catalog.ts [products=20000]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDb } from '../clickhouse/client.ts';
import { migrate } from '../clickhouse/migrate.ts';
import { allProducts, collectionMembers, productsByIds } from '../clickhouse/queries/catalog.ts';
import { avroType } from '../schemas/avro/logical-types.ts';
import { CATALOG_AVRO, type CatalogProduct } from '../schemas/catalog.ts';
import { normalizeCollection, normalizeProduct } from '../services/catalog/normalize.ts';
import { catalogCollectionsProcessor, catalogProductsProcessor, type Change } from '../streams/catalog/index.ts';
import type { Decoded } from '../streams/runtime/types.ts';

const N = Number(process.argv[2] ?? 20_000);
const now = new Date().toISOString();

function payload(id: number) {
  return {
    id,
    title: `Product ${id} cotton tee`,
    handle: `product-${id}`,
    body_html: `<p>Soft <b>cotton</b> tee number ${id}, with a relaxed fit.</p>`.repeat(3),
    vendor: `Vendor ${id % 50}`,
    product_type: ['Tees', 'Shirts', 'Hoodies'][id % 3],
    tags: 'summer, cotton, basics, new',
    status: 'active',
    created_at: '2026-01-01T00:00:00Z',
    updated_at: new Date(Date.parse('2026-02-01T00:00:00Z') + id * 1000).toISOString(),
    published_at: '2026-01-02T00:00:00Z',
    options: [
      { name: 'Size', values: ['S', 'M', 'L', 'XL', 'XXL'] },
      { name: 'Color', values: ['Black', 'White'] },
    ],
    variants: Array.from({ length: 10 }, (_, v) => ({
      id: id * 100 + v,
      title: `${['S', 'M', 'L', 'XL', 'XXL'][v % 5]} / ${v < 5 ? 'Black' : 'White'}`,
      sku: `SKU-${id}-${v}`,
      price: (19 + (id % 30) + v * 0.5).toFixed(2),
      compare_at_price: v % 3 === 0 ? '49.00' : null,
      option1: ['S', 'M', 'L', 'XL', 'XXL'][v % 5],
      option2: v < 5 ? 'Black' : 'White',
      position: v + 1,
      inventory_item_id: id * 100 + v,
      inventory_management: 'shopify',
      inventory_quantity: (id + v) % 7,
    })),
    images: Array.from({ length: 5 }, (_, i) => ({
      id: id * 10 + i,
      src: `https://cdn.example.com/p/${id}/${i}.jpg`,
      alt: `view ${i}`,
      width: 1200,
      height: 1500,
      position: i + 1,
    })),
    metafields: [{ namespace: 'custom', key: 'material', value: 'cotton', type: 'single_line_text_field' }],
  };
}

function time<T>(fn: () => T, reps: number): { perOpUs: number; result: T } {
  let result!: T;
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) result = fn();
  return { perOpUs: ((performance.now() - t0) * 1000) / reps, result };
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

// ---- 1. CPU per product
const texts = Array.from({ length: 2000 }, (_, i) => JSON.stringify(payload(i + 1)));
const parse = time(() => texts.map((t) => JSON.parse(t)), 5);
const norm = time(
  () =>
    texts.map((t) => {
      const r = normalizeProduct('bench', JSON.parse(t), { source: 'webhook', now });
      if (!r.ok) throw new Error('invalid');
      return r.value.product;
    }),
  5,
);
const type = avroType(CATALOG_AVRO.products);
const products = norm.result as CatalogProduct[];
const enc = time(() => products.map((p) => type.toBuffer(p)), 5);
const bufs = enc.result as Buffer[];
const dec = time(() => bufs.map((b) => type.fromBuffer(b)), 5);
const per = (us: number) => (us / texts.length).toFixed(1);
process.stdout.write(
  [
    `product payload: ${Math.round(texts[0].length / 1024)} KiB JSON, 10 variants, 5 images; Avro ${bufs[0].length} bytes`,
    `  JSON.parse (baseline)        ${per(parse.perOpUs)} µs/product`,
    `  parse + normalize (zod)      ${per(norm.perOpUs)} µs/product  (${(norm.perOpUs / parse.perOpUs).toFixed(1)}× baseline)`,
    `  Avro encode                  ${per(enc.perOpUs)} µs/product`,
    `  Avro decode                  ${per(dec.perOpUs)} µs/product`,
    '',
  ].join('\n'),
);

// ---- 2. projection writes and queries on chDB
const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-catalog-'));
const db = await openDb({ chdbPath: dir, database: 'bench' });
try {
  await migrate(db);
  const BATCH = 5_000;
  let offset = 0n;
  const t0 = performance.now();
  for (let start = 1; start <= N; start += BATCH) {
    const batch: Decoded<Change<CatalogProduct>>[] = [];
    for (let id = start; id < Math.min(start + BATCH, N + 1); id++) {
      const r = normalizeProduct('bench', payload(id), { source: 'import', now });
      if (!r.ok) throw new Error('invalid');
      batch.push({
        value: { op: 'upsert', record: r.value.product },
        position: { topic: 'products', partition: 0, offset: offset++ },
        brokerTime: Date.now(),
      });
    }
    const res = await catalogProductsProcessor.process(batch, {} as never);
    for (const w of res.writes) await db.insert(w.table, w.rows, { dedupToken: `bench/0/${start}` });
  }
  const writeS = (performance.now() - t0) / 1000;
  process.stdout.write(
    `projection: ${N} products normalized + written in ${writeS.toFixed(2)} s = ${Math.round(N / writeS)} products/s (batches of ${BATCH})\n`,
  );

  const members = Array.from({ length: 1000 }, (_, i) => String(((i * 7919) % N) + 1));
  const c = normalizeCollection(
    'bench',
    { id: 1, handle: 'all', title: 'All', product_ids: members },
    { source: 'import', now },
  );
  if (!c.ok || !c.value.members) throw new Error('invalid collection');
  await db.insert(
    'catalog_collections',
    (
      await catalogCollectionsProcessor.process(
        [
          {
            value: { op: 'upsert', record: c.value.collection },
            position: { topic: 'collections', partition: 0, offset: 0n },
            brokerTime: Date.now(),
          },
          {
            value: { op: 'upsert', record: c.value.members },
            position: { topic: 'collections', partition: 0, offset: 1n },
            brokerTime: Date.now(),
          },
        ],
        {} as never,
      )
    ).writes[0].rows,
  );
  const res = await catalogCollectionsProcessor.process(
    [
      {
        value: { op: 'upsert', record: c.value.members },
        position: { topic: 'collections', partition: 0, offset: 1n },
        brokerTime: Date.now(),
      },
    ],
    {} as never,
  );
  await db.insert('catalog_collection_members', res.writes[1].rows);

  const measure = async (label: string, fn: () => Promise<unknown>, reps = 30) => {
    await fn();
    const ms: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t = performance.now();
      await fn();
      ms.push(performance.now() - t);
    }
    process.stdout.write(`  ${label.padEnd(44)} p50 ${pct(ms, 50).toFixed(1)} ms  p95 ${pct(ms, 95).toFixed(1)} ms\n`);
  };
  process.stdout.write(`queries over ${N} products (chDB, one query at a time):\n`);
  await measure('SELECT 1 (baseline)', () => db.query('SELECT 1'));
  const ids = Array.from({ length: 50 }, (_, i) => String(((i * 104729) % N) + 1));
  await measure('productsByIds (50 ids, with availability)', () => productsByIds(db, 'bench', ids));
  await measure('collectionMembers (1000 members)', () => collectionMembers(db, 'bench', '1'));
  await measure('allProducts (page of 1000)', () => allProducts(db, 'bench', { limit: 1000 }), 5);
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
