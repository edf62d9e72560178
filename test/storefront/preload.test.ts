// The Link header's image preloads (services/storefront/results/preload.ts): the first 6 products'
// images, each once, with the store's srcset widths and its rewrite domain.
import { describe, expect, it } from 'vitest';
import { linkHeader, MAX_PRELOADS } from '../../services/storefront/results/preload.ts';
import type { StoreRecord } from '../../services/store-config/api.ts';

const store = (mediaPreloads: Partial<StoreRecord['mediaPreloads']> = {}) =>
  ({
    mediaPreloads: { enabled: true, srcsetSizes: [360, 540], rewriteDomain: null, rewriteUrls: true, ...mediaPreloads },
  }) as StoreRecord;
const settings = { srcsetSizes: [360, 540], sizes: null };
const hints = (link: string | null) => (link ?? '').split(/,\s*(?=<)/).filter(Boolean);

describe('image preloads (Link header)', () => {
  it('hints each image once, however many of the first products share it', () => {
    const img = (n: number) => `https://cdn.example.com/img-${n}.png`;
    const link = linkHeader([img(1), img(2), img(1), null, img(2), img(3), img(4)], store(), settings);
    expect(hints(link).map((h) => h.slice(1, h.indexOf('>')))).toEqual([img(1), img(2), img(3)]);
    expect(hints(link)[0]).toBe(
      `<${img(1)}>; rel=preload; as=image; fetchpriority=high; imagesrcset="${img(1)}?width=360 360w, ${img(1)}?width=540 540w"`,
    );
  });

  it('looks at the first 6 products only, and sends nothing when none has an image', () => {
    const images = Array.from({ length: 10 }, (_, i) => `https://cdn.example.com/p${i}.jpg`);
    expect(hints(linkHeader(images, store(), settings))).toHaveLength(MAX_PRELOADS);
    expect(linkHeader([null, null], store(), settings)).toBeNull();
  });

  it('rewrites image hosts to the store domain, and treats two URLs that rewrite alike as one image', () => {
    const link = linkHeader(
      ['https://a.example.com/x.png', 'https://b.example.com/x.png'],
      store({ rewriteDomain: 'shop.example.com' }),
      { srcsetSizes: [200], sizes: '50vw' },
    );
    expect(hints(link)).toEqual([
      '<https://shop.example.com/x.png>; rel=preload; as=image; fetchpriority=high; imagesrcset="https://shop.example.com/x.png?width=200 200w"; imagesizes="50vw"',
    ]);
  });
});
