// Demo product images: sharp renders real PNGs, one silhouette per product type, and the pixels differ
// between types (and between colours), so image search has something to tell apart.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { IMAGE_SIZE } from '../../services/demo/generator/generator.ts';
import { allImageNames, ImageCache, parseImageName, renderImage } from '../../services/demo/generator/images.ts';
import { PRODUCT_TYPES } from '../../services/demo/generator/vocab.ts';

async function pixels(png: Buffer): Promise<Buffer> {
  return sharp(png).removeAlpha().raw().toBuffer();
}

/** mean absolute difference per channel, 0-255 */
function meanDiff(a: Buffer, b: Buffer): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i] - b[i]);
  return sum / a.length;
}

describe('demo images', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-demo-images-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('renders a real PNG of the catalog dimensions', async () => {
    const png = await renderImage({ type: 'dress', color: 'red', pattern: 0 });
    expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
    const meta = await sharp(png).metadata();
    expect(meta.format).toBe('png');
    expect(meta.width).toBe(IMAGE_SIZE);
    expect(meta.height).toBe(IMAGE_SIZE);
    // the red of the dress is really there: the centre pixel is red
    const raw = await pixels(png);
    const centre = (256 * IMAGE_SIZE + 256) * 3;
    expect([raw[centre], raw[centre + 1], raw[centre + 2]]).toEqual([0xc0, 0x39, 0x2b]);
  });

  it('pixels differ between every pair of product types (same colour and pattern)', async () => {
    const rendered = await Promise.all(
      PRODUCT_TYPES.map(async (t) => pixels(await renderImage({ type: t.slug, color: 'navy', pattern: 0 }))),
    );
    let smallest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < rendered.length; i++) {
      for (let j = i + 1; j < rendered.length; j++) smallest = Math.min(smallest, meanDiff(rendered[i], rendered[j]));
    }
    // every two silhouettes differ by a visible amount (a few % of the canvas at full contrast)
    expect(smallest).toBeGreaterThan(1.5);
  });

  it('colour and pattern change the pixels; the same name renders the same bytes', async () => {
    const a = await renderImage({ type: 'mug', color: 'green', pattern: 0 });
    const b = await renderImage({ type: 'mug', color: 'yellow', pattern: 0 });
    const c = await renderImage({ type: 'mug', color: 'green', pattern: 1 });
    expect(meanDiff(await pixels(a), await pixels(b))).toBeGreaterThan(5);
    expect(meanDiff(await pixels(a), await pixels(c))).toBeGreaterThan(1);
    expect((await renderImage({ type: 'mug', color: 'green', pattern: 0 })).equals(a)).toBe(true);
  });

  it('names: only demo images parse (no path tricks), and every catalog image name is renderable', () => {
    expect(parseImageName('dress-navy-2.png')).toEqual({ type: 'dress', color: 'navy', pattern: 2 });
    for (const bad of [
      '../etc-passwd-0.png',
      'dress-navy-4.png',
      'dress-teal-0.png',
      'robot-navy-0.png',
      'dress-navy-0.jpg',
      'dress-navy-0.png/..',
    ]) {
      expect(parseImageName(bad)).toBeUndefined();
    }
    const names = allImageNames();
    expect(names.length).toBe(PRODUCT_TYPES.length * 16 * 4);
    for (const n of names) expect(parseImageName(n)).toBeDefined();
  });

  it('the cache renders once to disk and serves the same bytes after', async () => {
    const cache = new ImageCache(dir);
    const first = await cache.get('hat-beige-3.png');
    expect(first).toBeDefined();
    expect(readdirSync(dir)).toEqual(['hat-beige-3.png']);
    const again = await new ImageCache(dir).get('hat-beige-3.png');
    expect(again?.equals(first as Buffer)).toBe(true);
    expect(await cache.get('nope.png')).toBeUndefined();
    expect(await cache.prerender(5)).toBe(5);
    expect(readdirSync(dir).filter((f) => f.endsWith('.png')).length).toBe(6);
  });
});
