// The read API's image index (services/storefront/images/index.ts): once image search has built a store's
// feature matrix, the images' vectors are views of it (one copy of the store's features), and every answer
// stays that of an index built fresh from the same rows, across changes that rebuild the matrix.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ImageFeatureRow } from '../../clickhouse/queries/images.ts';
import { LOCAL_DIMS, LOCAL_MODEL, localProvider } from '../../services/common/image-features.ts';
import { StoreImages } from '../../services/storefront/images/index.ts';

const vector = fc.array(fc.float({ min: 0, max: 1, noNaN: true }), { minLength: LOCAL_DIMS, maxLength: LOCAL_DIMS });
const hash = fc.stringMatching(/^[0-9a-f]{16}$/);
const rowOf = (id: number, images: { v: number[]; h: string; ok: boolean }[]): ImageFeatureRow => ({
  item_type: 'product',
  item_id: String(id),
  model: LOCAL_MODEL,
  image_srcs: images.map((_, i) => `https://cdn.example/${id}/${i}.jpg`),
  image_status: images.map((im) => (im.ok ? 'ok' : 'decode_failed')),
  image_hashes: images.map((im) => im.h),
  image_vectors: images.map((im) => (im.ok ? im.v : [])),
});
const image = fc.record({ v: vector, h: hash, ok: fc.boolean() });

describe('image index', () => {
  it('holds the vectors once after a search, and answers as an index built fresh, across changes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(image, { minLength: 1, maxLength: 3 }), { minLength: 2, maxLength: 12 }),
        fc.array(fc.tuple(fc.nat(20), fc.option(fc.array(image, { minLength: 1, maxLength: 2 }))), { maxLength: 6 }),
        fc.array(fc.record({ v: vector, h: hash }), { minLength: 1, maxLength: 3 }),
        (initial, changes, queries) => {
          const rows = new Map<string, ImageFeatureRow>();
          const live = new StoreImages('s-images');
          const put = (r: ImageFeatureRow) => {
            rows.set(r.item_id, r);
            live.put('product', r);
          };
          for (const [i, ims] of initial.entries()) put(rowOf(i, ims));
          const check = () => {
            const fresh = new StoreImages('s-images');
            for (const r of rows.values()) fresh.put('product', r);
            for (const q of queries) {
              const query = { model: LOCAL_MODEL, vector: Float32Array.from(q.v), hash: q.h };
              expect(live.productSimilarities(query, localProvider)).toEqual(
                fresh.productSimilarities(query, localProvider),
              );
            }
            // one buffer holds every described image's vector
            const buffers = new Set(
              [...live.items.product.values()].flatMap((it) =>
                it.features.flatMap((f) => (f ? [f.vector.buffer] : [])),
              ),
            );
            expect(buffers.size).toBeLessThanOrEqual(1);
            for (const it of live.items.product.values())
              for (const f of it.features) if (f) expect(f.vector.length).toBe(LOCAL_DIMS);
          };
          check();
          for (const [id, ims] of changes) {
            if (ims === null) {
              rows.delete(String(id));
              live.remove('product', String(id));
            } else put(rowOf(id, ims));
          }
          check();
          // the values a view shows are the row's own (Float32 as they were stored)
          for (const r of rows.values())
            live.items.product.get(r.item_id)?.features.forEach((f, i) => {
              if (f) expect([...f.vector]).toEqual([...Float32Array.from(r.image_vectors[i] as number[])]);
            });
        },
      ),
      { numRuns: 60 },
    );
  });
});
