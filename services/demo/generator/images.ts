// Product images of the demo store, rendered locally with sharp (SVG → PNG), so image search has real
// pixels to work with: one silhouette per product type, filled with the variant colour, with one of four
// patterns (plain, stripes, dots, band). Images are named `<type>-<colour>-<pattern>.png`; the same name
// always renders the same pixels. Swatch images of the colour metaobjects (metaobjects.ts) are
// `swatch-<colour>-<pattern>.png`: the colour and pattern over the whole square. The app serves them at /demo/images/<name> (services/demo/module.ts),
// rendering on first request and caching on disk; `prerenderImages` renders a sample ahead of time.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { IMAGE_SIZE } from './model.ts';
import { COLORS, PRODUCT_TYPES } from './vocab.ts';

export interface ImageSpec {
  type: string;
  color: string;
  pattern: number;
}

const NAME_RE = /^([a-z]+)-([a-z]+)-([0-3])\.png$/;
const SWATCH = 'swatch';
const TYPE_SLUGS = new Set([...PRODUCT_TYPES.map((t) => t.slug), SWATCH]);
const COLOR_HEX = new Map(COLORS.map((c) => [c.slug, c.hex]));

/** `dress-navy-2.png` → spec; undefined for a name that is not a demo image */
export function parseImageName(name: string): ImageSpec | undefined {
  const m = NAME_RE.exec(name);
  if (!m || !TYPE_SLUGS.has(m[1]) || !COLOR_HEX.has(m[2])) return undefined;
  return { type: m[1], color: m[2], pattern: Number(m[3]) };
}

export function imageName(spec: ImageSpec): string {
  return `${spec.type}-${spec.color}-${spec.pattern}.png`;
}

/** the swatch image of a colour (metaobjects.ts), e.g. `swatch-navy-1.png` */
export function swatchImageName(colorSlug: string, pattern: number): string {
  return imageName({ type: SWATCH, color: colorSlug, pattern });
}

/** every product image name the demo catalog can refer to (swatch images render on first request) */
export function allImageNames(): string[] {
  const out: string[] = [];
  for (const t of PRODUCT_TYPES)
    for (const c of COLORS)
      for (let p = 0; p < 4; p++) out.push(imageName({ type: t.slug, color: c.slug, pattern: p }));
  return out;
}

// Silhouettes on a 512 × 512 canvas. `F` = the fill (colour or pattern), `S` = the outline colour.
const SHAPES: Record<string, string> = {
  [SWATCH]: '<rect width="512" height="512" fill="F"/>',
  dress:
    '<path d="M206 70 h100 l14 70 l86 300 h-300 l86-300 z" fill="F" stroke="S" stroke-width="6"/><path d="M206 70 q50 40 100 0" fill="none" stroke="S" stroke-width="6"/>',
  shirt:
    '<path d="M186 80 l-100 60 l36 80 l44-20 v220 h180 v-220 l44 20 l36-80 l-100-60 q-70 50 -140 0 z" fill="F" stroke="S" stroke-width="6"/><path d="M256 130 v280" stroke="S" stroke-width="4"/>',
  tshirt:
    '<path d="M196 90 l-110 50 l30 70 l50-20 v230 h180 v-230 l50 20 l30-70 l-110-50 q-60 40 -120 0 z" fill="F" stroke="S" stroke-width="6"/>',
  sweater:
    '<path d="M190 80 l-100 50 l-20 260 h60 l20-180 v230 h212 v-230 l20 180 h60 l-20-260 l-100-50 q-66 40 -132 0 z" fill="F" stroke="S" stroke-width="6"/><rect x="166" y="400" width="180" height="30" fill="S" opacity="0.3"/>',
  jacket:
    '<path d="M186 70 l-110 60 l-10 300 h70 l10-190 v210 h220 v-210 l10 190 h70 l-10-300 l-110-60 l-70 110 z" fill="F" stroke="S" stroke-width="6"/><path d="M256 180 v270 M186 70 l70 110 l70-110" fill="none" stroke="S" stroke-width="5"/>',
  jeans:
    '<path d="M166 60 h180 l30 390 h-90 l-30-280 l-30 280 h-90 z" fill="F" stroke="S" stroke-width="6"/><path d="M166 100 h180" stroke="S" stroke-width="5"/>',
  trousers:
    '<path d="M176 60 h160 l20 390 h-80 l-20-300 l-20 300 h-80 z" fill="F" stroke="S" stroke-width="6"/><path d="M176 96 h160" stroke="S" stroke-width="5"/>',
  skirt:
    '<path d="M196 110 h120 l70 280 h-260 z" fill="F" stroke="S" stroke-width="6"/><rect x="190" y="96" width="132" height="26" fill="S" opacity="0.5"/>',
  shorts:
    '<path d="M156 140 h200 l20 200 h-100 l-20-110 l-20 110 h-100 z" fill="F" stroke="S" stroke-width="6"/><path d="M156 172 h200" stroke="S" stroke-width="5"/>',
  sneakers:
    '<path d="M70 330 q10-90 90-110 l80 40 q90 20 160 50 q50 20 50 70 v30 h-380 z" fill="F" stroke="S" stroke-width="6"/><rect x="70" y="390" width="380" height="26" rx="10" fill="#fafafa" stroke="S" stroke-width="5"/>',
  boots:
    '<path d="M170 70 h120 v260 q90 10 130 60 v40 h-250 z" fill="F" stroke="S" stroke-width="6"/><rect x="160" y="420" width="270" height="26" rx="6" fill="S"/>',
  sandals:
    '<ellipse cx="256" cy="380" rx="190" ry="46" fill="F" stroke="S" stroke-width="6"/><path d="M150 370 q60-120 120 0 M250 370 q70-110 140 0" fill="none" stroke="S" stroke-width="18"/>',
  bag: '<path d="M196 190 q0-100 60-100 q60 0 60 100" fill="none" stroke="S" stroke-width="14"/><rect x="116" y="180" width="280" height="250" rx="24" fill="F" stroke="S" stroke-width="6"/>',
  backpack:
    '<rect x="136" y="110" width="240" height="320" rx="60" fill="F" stroke="S" stroke-width="6"/><rect x="176" y="290" width="160" height="110" rx="20" fill="S" opacity="0.35"/><path d="M216 110 q40-60 80 0" fill="none" stroke="S" stroke-width="12"/>',
  hat: '<ellipse cx="256" cy="340" rx="200" ry="50" fill="F" stroke="S" stroke-width="6"/><path d="M156 335 q0-170 100-170 q100 0 100 170 z" fill="F" stroke="S" stroke-width="6"/><rect x="160" y="290" width="192" height="24" fill="S" opacity="0.5"/>',
  scarf:
    '<path d="M120 90 q136 60 272 0 l-30 70 q-106 50 -212 0 z" fill="F" stroke="S" stroke-width="6"/><path d="M300 140 l40 300 h-70 l-20-280 z" fill="F" stroke="S" stroke-width="6"/>',
  sunglasses:
    '<circle cx="170" cy="270" r="80" fill="F" stroke="S" stroke-width="10"/><circle cx="342" cy="270" r="80" fill="F" stroke="S" stroke-width="10"/><path d="M250 260 q6-20 12 0 M90 250 l-40-40 M422 250 l40-40" stroke="S" stroke-width="10" fill="none"/>',
  watch:
    '<rect x="206" y="40" width="100" height="432" rx="20" fill="S" opacity="0.6"/><circle cx="256" cy="256" r="110" fill="F" stroke="S" stroke-width="12"/><path d="M256 256 v-70 M256 256 h50" stroke="S" stroke-width="8"/>',
  belt: '<rect x="40" y="220" width="432" height="72" rx="12" fill="F" stroke="S" stroke-width="6"/><rect x="120" y="200" width="90" height="112" rx="10" fill="none" stroke="#c9a227" stroke-width="14"/>',
  mug: '<rect x="136" y="150" width="200" height="260" rx="18" fill="F" stroke="S" stroke-width="6"/><path d="M336 210 q90 0 90 70 q0 70 -90 70" fill="none" stroke="S" stroke-width="22"/>',
  candle:
    '<rect x="176" y="200" width="160" height="250" rx="10" fill="F" stroke="S" stroke-width="6"/><path d="M256 200 v-30" stroke="S" stroke-width="6"/><path d="M256 90 q30 40 0 80 q-30-40 0-80 z" fill="#f5a623"/>',
  lamp: '<path d="M166 90 h180 l50 150 h-280 z" fill="F" stroke="S" stroke-width="6"/><rect x="246" y="240" width="20" height="170" fill="S"/><ellipse cx="256" cy="420" rx="90" ry="22" fill="S"/>',
  cushion:
    '<path d="M116 126 q140-40 280 0 q40 130 0 260 q-140 40 -280 0 q-40-130 0-260 z" fill="F" stroke="S" stroke-width="6"/><circle cx="256" cy="256" r="14" fill="S"/>',
  vase: '<path d="M216 70 h80 v40 q90 80 70 220 q-16 110 -110 120 q-94-10 -110-120 q-20-140 70-220 z" fill="F" stroke="S" stroke-width="6"/>',
  blanket:
    '<rect x="90" y="150" width="332" height="110" rx="14" fill="F" stroke="S" stroke-width="6"/><rect x="90" y="260" width="332" height="110" rx="14" fill="F" stroke="S" stroke-width="6"/><path d="M90 200 h332 M90 320 h332" stroke="S" stroke-width="5" opacity="0.6"/>',
  serum:
    '<rect x="186" y="190" width="140" height="250" rx="22" fill="F" stroke="S" stroke-width="6"/><rect x="226" y="130" width="60" height="60" fill="S"/><ellipse cx="256" cy="110" rx="36" ry="30" fill="S" opacity="0.7"/><rect x="206" y="260" width="100" height="90" fill="#fafafa" opacity="0.8"/>',
  lipbalm:
    '<rect x="216" y="230" width="80" height="210" rx="12" fill="F" stroke="S" stroke-width="6"/><path d="M226 230 v-90 q30-40 60-10 v100 z" fill="S" opacity="0.75"/>',
};

function darken(hex: string, f: number): string {
  const n = Number.parseInt(hex.slice(1), 16);
  const ch = (s: number) => Math.max(0, Math.min(255, Math.round(((n >> s) & 255) * f)));
  return `#${[16, 8, 0].map((s) => ch(s).toString(16).padStart(2, '0')).join('')}`;
}

const isLight = (fill: string) =>
  Number.parseInt(fill.slice(1, 3), 16) > 200 && Number.parseInt(fill.slice(3, 5), 16) > 200;
/** the colour of a pattern's stripes, dots or band over a fill */
const accentOf = (fill: string) => (isLight(fill) ? '#c8c8c8' : darken(fill, 1.45));

/**
 * Whether a colour's patterns show: on a very dark fill the accent is nearly the fill (black: #1f1f1f
 * under #2d2d2d), so its four patterns render as one look (image look-alikes, quality.ts).
 */
export function patternVisible(colorSlug: string): boolean {
  const fill = COLOR_HEX.get(colorSlug);
  if (!fill) return true;
  const accent = accentOf(fill);
  return [1, 3, 5].some(
    (i) => Math.abs(Number.parseInt(fill.slice(i, i + 2), 16) - Number.parseInt(accent.slice(i, i + 2), 16)) >= 24,
  );
}

/** The SVG source of an image (exported for tests and for anyone who wants vector output). */
export function imageSvg(spec: ImageSpec): string {
  const fill = COLOR_HEX.get(spec.color);
  const shape = SHAPES[spec.type];
  if (!fill || !shape) throw new Error(`unknown demo image ${JSON.stringify(spec)}`);
  const light = isLight(fill);
  const stroke = light ? '#9a9a9a' : darken(fill, 0.6);
  const accent = accentOf(fill);
  const patterns = [
    '',
    `<pattern id="p" width="28" height="28" patternUnits="userSpaceOnUse" patternTransform="rotate(35)"><rect width="28" height="28" fill="${fill}"/><rect width="10" height="28" fill="${accent}"/></pattern>`,
    `<pattern id="p" width="32" height="32" patternUnits="userSpaceOnUse"><rect width="32" height="32" fill="${fill}"/><circle cx="16" cy="16" r="6" fill="${accent}"/></pattern>`,
    `<pattern id="p" width="512" height="120" patternUnits="userSpaceOnUse"><rect width="512" height="120" fill="${fill}"/><rect y="48" width="512" height="24" fill="${accent}"/></pattern>`,
  ];
  const paint = spec.pattern === 0 ? fill : 'url(#p)';
  const body = shape.replace(/"F"/g, `"${paint}"`).replace(/"S"/g, `"${stroke}"`);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${IMAGE_SIZE}" height="${IMAGE_SIZE}" viewBox="0 0 512 512">` +
    `<defs><linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#f7f5f1"/><stop offset="1" stop-color="#e9e4dc"/></linearGradient>${patterns[spec.pattern]}</defs>` +
    `<rect width="512" height="512" fill="url(#bg)"/><ellipse cx="256" cy="470" rx="180" ry="14" fill="#000" opacity="0.08"/>${body}</svg>`
  );
}

/** Render one image to PNG bytes. */
export async function renderImage(spec: ImageSpec): Promise<Buffer> {
  return sharp(Buffer.from(imageSvg(spec)))
    .png({ compressionLevel: 6 })
    .toBuffer();
}

/** An on-disk cache of rendered images (DATA_DIR/demo-images): render once, serve many times. */
export class ImageCache {
  readonly dir: string;
  private readonly inflight = new Map<string, Promise<Buffer>>();

  constructor(dir: string) {
    this.dir = dir;
  }

  /** PNG bytes of a demo image by name; undefined when the name is not a demo image */
  async get(name: string): Promise<Buffer | undefined> {
    const spec = parseImageName(name);
    if (!spec) return undefined;
    const file = path.join(this.dir, imageName(spec));
    try {
      return await readFile(file);
    } catch {
      // not rendered yet
    }
    let p = this.inflight.get(file);
    if (!p) {
      p = (async () => {
        const png = await renderImage(spec);
        await mkdir(this.dir, { recursive: true });
        // write-then-rename: a crash never leaves a truncated image behind
        const tmp = `${file}.${process.pid}.tmp`;
        await writeFile(tmp, png);
        await rename(tmp, file);
        return png;
      })().finally(() => this.inflight.delete(file));
      this.inflight.set(file, p);
    }
    return p;
  }

  /** Render `count` images ahead of time (the most common first: pattern 0, every type and colour). */
  async prerender(count: number, onProgress?: (done: number) => void): Promise<number> {
    const names = allImageNames().sort((a, b) => Number(a.at(-5)) - Number(b.at(-5)));
    let done = 0;
    for (const name of names.slice(0, Math.max(0, count))) {
      await this.get(name);
      done++;
      if (onProgress && done % 100 === 0) onProgress(done);
    }
    return done;
  }
}
