// The local image features (services/common/image-features.ts) on real pixels: the demo store's rendered
// product images, re-encoded, cropped and resized as a shopper's photo or screenshot would be. The same
// image stays the most similar through those changes; colour, type and pattern each cost similarity;
// JPEG, PNG and WebP decode; anything else, truncated data and oversized input are refused with a reason.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  DECODE_SIDE,
  decodeImage,
  ImageError,
  imageFeatureProvider,
  LOCAL_DIMS,
  MAX_IMAGE_BYTES,
  sniffFormat,
} from '../../services/common/image-features.ts';
import { renderImage } from '../../services/demo/generator/images.ts';

const provider = imageFeatureProvider();

/** a shopper's copy: cropped a little, resized, brightened, re-encoded as JPEG */
async function photoOf(png: Buffer): Promise<Buffer> {
  return sharp(png)
    .extract({ left: 18, top: 12, width: 480, height: 488 })
    .resize(320, 320)
    .modulate({ brightness: 1.05 })
    .jpeg({ quality: 70 })
    .toBuffer();
}

async function refusal(bytes: Buffer): Promise<string> {
  try {
    await provider.extract(bytes);
    return 'accepted';
  } catch (err) {
    expect(err).toBeInstanceOf(ImageError);
    return (err as ImageError).reason;
  }
}

describe('local image features', () => {
  it('describe an image by 192 numbers and a 64-bit hash, the same for the same pixels', async () => {
    const png = await renderImage({ type: 'dress', color: 'navy', pattern: 1 });
    const a = await provider.extract(png);
    const b = await provider.extract(png);
    expect(a.model).toBe('local-v1');
    expect(a.vector).toHaveLength(LOCAL_DIMS);
    expect(a.hash).toMatch(/^[0-9a-f]{16}$/);
    expect(Array.from(a.vector)).toEqual(Array.from(b.vector));
    expect(provider.similarity(a, b)).toBeCloseTo(1, 6);
  });

  it('keep a re-encoded, cropped copy closest to its original, then same type and colour, then the rest', async () => {
    const query = await provider.extract(
      await photoOf(await renderImage({ type: 'dress', color: 'navy', pattern: 1 })),
    );
    const sim = async (type: string, color: string, pattern: number) =>
      provider.similarity(query, await provider.extract(await renderImage({ type, color, pattern })));
    const same = await sim('dress', 'navy', 1);
    const others = {
      otherPattern: await sim('dress', 'navy', 0),
      otherColour: await sim('dress', 'black', 1),
      otherType: await sim('skirt', 'navy', 1),
      unrelated: await sim('mug', 'red', 0),
    };
    expect(same).toBeGreaterThan(0.9);
    for (const [what, s] of Object.entries(others)) expect(same, what).toBeGreaterThan(s + 0.03);
    expect(others.otherColour).toBeGreaterThan(others.unrelated);
    expect(others.otherType).toBeGreaterThan(others.unrelated);
  });

  it('decode JPEG, PNG and WebP; transparency is flattened onto white', async () => {
    const png = await renderImage({ type: 'bag', color: 'red', pattern: 0 });
    for (const [format, bytes] of [
      ['png', png],
      ['jpeg', await sharp(png).jpeg().toBuffer()],
      ['webp', await sharp(png).webp().toBuffer()],
    ] as const) {
      expect(sniffFormat(bytes)).toBe(format);
      const d = await decodeImage(bytes);
      expect(d.format).toBe(format);
      expect(d.rgb).toHaveLength(DECODE_SIDE * DECODE_SIDE * 3);
    }
    const clear = await sharp({
      create: { width: 8, height: 8, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
    })
      .png()
      .toBuffer();
    const d = await decodeImage(clear);
    expect([...d.rgb.subarray(0, 3)]).toEqual([255, 255, 255]);
  });

  it('refuse what is not a usable JPEG, PNG or WebP, with a reason', async () => {
    const png = await renderImage({ type: 'hat', color: 'navy', pattern: 2 });
    const jpeg = await sharp(png).jpeg().toBuffer();
    expect(await refusal(Buffer.from('GIF89a not supported'))).toBe('unsupported_format');
    expect(await refusal(Buffer.from('{"an":"image?"}'))).toBe('unsupported_format');
    expect(await refusal(await sharp(png).gif().toBuffer())).toBe('unsupported_format');
    expect(await refusal(png.subarray(0, Math.floor(png.length / 2)))).toBe('truncated');
    expect(await refusal(jpeg.subarray(0, Math.floor(jpeg.length / 2)))).toBe('truncated');
    expect(await refusal(Buffer.concat([png.subarray(0, 40), Buffer.alloc(200, 7)]))).toMatch(/truncated|undecodable/);
    expect(await refusal(Buffer.alloc(MAX_IMAGE_BYTES + 1, 0xff))).toBe('too_large');
    // a decompression bomb: a small file declaring 60 million pixels
    const bomb = await sharp({ create: { width: 10_000, height: 6_000, channels: 3, background: '#fff' } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    expect(bomb.length).toBeLessThan(MAX_IMAGE_BYTES);
    expect(await refusal(bomb)).toBe('too_many_pixels');
  });
});
