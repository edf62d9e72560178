// Visual features of an image, shared by the image-features processor (streams/images: product and content
// images) and the read API (services/storefront/images: the query image of image search), so both sides
// compute exactly the same numbers. Real pixels: decoded with sharp (JPEG, PNG, WebP), EXIF-rotated,
// transparency flattened onto white, resampled to 64 × 64.
//
// The local provider (`local-v1`, the default; no network, no model files) describes an image by
//   - a foreground-weighted HSV colour histogram (112 bins: 12 hues, soft-assigned, × 3 saturations × 3
//     values, plus 4 grey levels): each pixel counts by how far its colour is from the background colour,
//     estimated from the image border, so a product photographed on a plain backdrop is described by the
//     product rather than the backdrop;
//   - a spatial colour layout (4 × 4 cells, mean CIE Lab each: 48 numbers): where the colours are;
//   - an edge-orientation histogram (8 orientations × 2 × 2 quadrants: 32 numbers): shape and pattern
//     (stripes, dots) independently of colour;
//   - a 64-bit difference hash (dHash) of the grey image: near-duplicates.
// Similarity (0-1) is 0.45 histogram intersection + 0.2 layout + 0.2 edge cosine + 0.15 hash agreement.
//
// A learned model (a CLIP-style embedding service) plugs in as another `ImageFeatureProvider`, selected by
// configuration (IMAGE_FEATURES=http, IMAGE_MODEL_URL, IMAGE_MODEL: `httpImageProvider` below): its
// `model` id is stored with every feature row, and the read API uses only features of its configured model.
import sharp from 'sharp';

/** uploads and fetched images larger than this are refused (the spec's 15 MB) */
export const MAX_IMAGE_BYTES = 15 * 1024 * 1024;
/** decoded pixels at most (a decompression bomb is refused before it is decoded) */
export const MAX_IMAGE_PIXELS = 50_000_000;
export const IMAGE_FORMATS = ['jpeg', 'png', 'webp'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

export type ImageErrorReason = 'too_large' | 'unsupported_format' | 'truncated' | 'too_many_pixels' | 'undecodable';

/** An image that cannot be described: the reason is a stable code, the message says what to do. */
export class ImageError extends Error {
  readonly reason: ImageErrorReason;
  constructor(reason: ImageErrorReason, message: string) {
    super(message);
    this.name = 'ImageError';
    this.reason = reason;
  }
}

export interface ImageFeatures {
  /** the provider that computed them (features of different models are never compared) */
  model: string;
  vector: Float32Array;
  /** 64-bit perceptual hash as 16 hex digits ('' when the provider has none) */
  hash: string;
}

export interface ImageFeatureProvider {
  readonly model: string;
  /** decode and describe; throws ImageError for what is not a usable JPEG, PNG or WebP */
  extract(bytes: Buffer): Promise<ImageFeatures>;
  /** 0 (unrelated) … 1 (the same image) */
  similarity(a: ImageFeatures, b: ImageFeatures): number;
}

// ── decoding ──

/** decoded at this size; the object is then found, centred and resampled to SIDE */
export const DECODE_SIDE = 192;
const SIDE = 64;
const HUES = 12;
const HIST = HUES * 9 + 4;
const LAYOUT = 48;
const EDGES = 32;
export const LOCAL_DIMS = HIST + LAYOUT + EDGES;
export const LOCAL_MODEL = 'local-v1';

/** The format of an image's bytes, checked by its signature (before any decoding). */
export function sniffFormat(bytes: Buffer): ImageFormat | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (bytes.length >= 8 && bytes.readUInt32BE(0) === 0x89504e47 && bytes.readUInt32BE(4) === 0x0d0a1a0a) return 'png';
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP')
    return 'webp';
  return null;
}

/** Decode to 192 × 192 RGB (EXIF-rotated, alpha flattened onto white); ImageError when unusable. */
export async function decodeImage(
  bytes: Buffer,
): Promise<{ rgb: Buffer; format: ImageFormat; width: number; height: number }> {
  if (bytes.length > MAX_IMAGE_BYTES)
    throw new ImageError('too_large', `the image is ${bytes.length} bytes; at most ${MAX_IMAGE_BYTES} (15 MB)`);
  const format = sniffFormat(bytes);
  if (!format) throw new ImageError('unsupported_format', 'not a JPEG, PNG or WebP image');
  let width = 0;
  let height = 0;
  try {
    const img = sharp(bytes, { failOn: 'truncated', limitInputPixels: MAX_IMAGE_PIXELS, sequentialRead: true });
    const meta = await img.metadata();
    width = meta.width ?? 0;
    height = meta.height ?? 0;
    if (width * height > MAX_IMAGE_PIXELS)
      throw new ImageError('too_many_pixels', `the image has ${width} × ${height} pixels; at most ${MAX_IMAGE_PIXELS}`);
    const { data } = await img
      .rotate()
      .flatten({ background: '#ffffff' })
      .resize(DECODE_SIDE, DECODE_SIDE, { fit: 'fill', kernel: 'cubic' })
      .removeAlpha()
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (data.length !== DECODE_SIDE * DECODE_SIDE * 3)
      throw new ImageError('undecodable', 'the image could not be decoded');
    return { rgb: data, format, width, height };
  } catch (err) {
    if (err instanceof ImageError) throw err;
    const msg = (err as Error).message;
    if (/pixel limit/i.test(msg))
      throw new ImageError('too_many_pixels', `the image has more than ${MAX_IMAGE_PIXELS} pixels`);
    if (/truncat|premature end|unexpected end|corrupt|damaged|read error|not enough data|incomplete/i.test(msg))
      throw new ImageError('truncated', `the ${format.toUpperCase()} data is truncated or corrupt`);
    throw new ImageError('undecodable', `the ${format.toUpperCase()} image could not be decoded`);
  }
}

// ── the local features ──

function rgbToHsv(r: number, g: number, b: number): [number, number, number] {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const d = max - min;
  let h = 0;
  if (d > 0) {
    if (max === r) h = ((g - b) / d + 6) % 6;
    else if (max === g) h = (b - r) / d + 2;
    else h = (r - g) / d + 4;
  }
  return [h / 6, max === 0 ? 0 : d / max, max / 255];
}

const srgbLinear = (c: number) => {
  const v = c / 255;
  return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
};
const labF = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 / 116) * t + 16 / 116);

function rgbToLab(r: number, g: number, b: number): [number, number, number] {
  const R = srgbLinear(r);
  const G = srgbLinear(g);
  const B = srgbLinear(b);
  const x = labF((0.4124 * R + 0.3576 * G + 0.1805 * B) / 0.95047);
  const y = labF(0.2126 * R + 0.7152 * G + 0.0722 * B);
  const z = labF((0.0193 * R + 0.1192 * G + 0.9505 * B) / 1.08883);
  return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
}

/** the mean colour of an image's border pixels: its background, for a product on a plain backdrop */
function borderColour(rgb: Buffer, side: number): [number, number, number] {
  let r = 0;
  let g = 0;
  let b = 0;
  let n = 0;
  for (let y = 0; y < side; y++)
    for (let x = 0; x < side; x++) {
      if (x !== 0 && y !== 0 && x !== side - 1 && y !== side - 1) continue;
      const i = (y * side + x) * 3;
      r += rgb[i];
      g += rgb[i + 1];
      b += rgb[i + 2];
      n++;
    }
  return [r / n, g / n, b / n];
}

/**
 * The object centred: the bounding box of the pixels that differ from the background, made square
 * (plus a small margin, padded with the background) and resampled to SIDE × SIDE by area averaging. A
 * crop, a shift or a different margin of the same picture gives the same result; a full-bleed image (no
 * background) stays whole.
 */
function centreObject(rgb: Buffer, side: number, bgc: [number, number, number]): Buffer {
  const [br, bg, bb] = bgc;
  const rows = new Uint32Array(side);
  const cols = new Uint32Array(side);
  for (let y = 0; y < side; y++)
    for (let x = 0; x < side; x++) {
      const i = (y * side + x) * 3;
      const d = (rgb[i] - br) ** 2 + (rgb[i + 1] - bg) ** 2 + (rgb[i + 2] - bb) ** 2;
      if (d > 40 * 40) {
        rows[y]++;
        cols[x]++;
      }
    }
  const min = Math.max(2, Math.round(side * 0.01));
  const first = (a: Uint32Array) => a.findIndex((v) => v >= min);
  const last = (a: Uint32Array) => a.length - 1 - [...a].reverse().findIndex((v) => v >= min);
  let x0 = first(cols);
  let y0 = first(rows);
  let x1 = last(cols);
  let y1 = last(rows);
  if (x0 < 0 || y0 < 0 || x1 >= side || y1 >= side) {
    x0 = 0;
    y0 = 0;
    x1 = side - 1;
    y1 = side - 1;
  }
  const half = (Math.max(x1 - x0, y1 - y0) + 1) * 0.53;
  const cx = (x0 + x1 + 1) / 2;
  const cy = (y0 + y1 + 1) / 2;
  const out = Buffer.alloc(SIDE * SIDE * 3);
  const step = (2 * half) / SIDE;
  // area sampling: a few sub-samples per output pixel
  const sub = Math.max(1, Math.min(4, Math.ceil(step)));
  for (let oy = 0; oy < SIDE; oy++)
    for (let ox = 0; ox < SIDE; ox++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (let sy = 0; sy < sub; sy++)
        for (let sx = 0; sx < sub; sx++) {
          const x = Math.floor(cx - half + (ox + (sx + 0.5) / sub) * step);
          const y = Math.floor(cy - half + (oy + (sy + 0.5) / sub) * step);
          if (x < 0 || y < 0 || x >= side || y >= side) {
            r += br;
            g += bg;
            b += bb;
          } else {
            const i = (y * side + x) * 3;
            r += rgb[i];
            g += rgb[i + 1];
            b += rgb[i + 2];
          }
        }
      const o = (oy * SIDE + ox) * 3;
      const k = sub * sub;
      out[o] = Math.round(r / k);
      out[o + 1] = Math.round(g / k);
      out[o + 2] = Math.round(b / k);
    }
  return out;
}

/** The local feature vector and dHash of decoded RGB pixels (DECODE_SIDE × DECODE_SIDE). */
export function localFeatures(decoded: Buffer, decodedSide = DECODE_SIDE): { vector: Float32Array; hash: string } {
  const n = SIDE * SIDE;
  const vector = new Float32Array(LOCAL_DIMS);
  const [br, bg, bb] = borderColour(decoded, decodedSide);
  const rgb = centreObject(decoded, decodedSide, [br, bg, bb]);
  const grey = new Float32Array(n);
  let total = 0;
  const lab = new Float64Array(LAYOUT);
  for (let p = 0; p < n; p++) {
    const r = rgb[p * 3];
    const g = rgb[p * 3 + 1];
    const b = rgb[p * 3 + 2];
    grey[p] = 0.299 * r + 0.587 * g + 0.114 * b;
    // foreground weight: distance from the background colour (a floor keeps a full-bleed image described)
    const dist = Math.sqrt((r - br) ** 2 + (g - bg) ** 2 + (b - bb) ** 2);
    const w = Math.max(0.02, Math.min(1, dist / 60));
    total += w;
    const [h, s, v] = rgbToHsv(r, g, b);
    if (s < 0.18 || v < 0.12) {
      vector[HUES * 9 + Math.min(3, Math.floor(v * 4))] += w;
    } else {
      const si = s < 0.45 ? 0 : s < 0.75 ? 1 : 2;
      const vi = v < 0.45 ? 0 : v < 0.75 ? 1 : 2;
      // soft hue: split between the two nearest hue bins
      const hp = h * HUES - 0.5;
      const h0 = Math.floor(hp);
      const f = hp - h0;
      const a = (h0 + HUES) % HUES;
      const c = (h0 + 1) % HUES;
      vector[(a * 3 + si) * 3 + vi] += w * (1 - f);
      vector[(c * 3 + si) * 3 + vi] += w * f;
    }
    // layout: mean Lab per 16 × 16 cell, scaled to about 0-1
    const cell = Math.floor(Math.floor(p / SIDE) / 16) * 4 + Math.floor((p % SIDE) / 16);
    const [L, A, B] = rgbToLab(r, g, b);
    lab[cell * 3] += L / 100;
    lab[cell * 3 + 1] += (A + 128) / 256;
    lab[cell * 3 + 2] += (B + 128) / 256;
  }
  for (let i = 0; i < HIST; i++) vector[i] /= total;
  for (let i = 0; i < LAYOUT; i++) vector[HIST + i] = lab[i] / 256;
  // edge orientations: Sobel on the grey image, 8 orientations (mod 180°) per quadrant, L2-normalized
  const e0 = HIST + LAYOUT;
  for (let y = 1; y < SIDE - 1; y++)
    for (let x = 1; x < SIDE - 1; x++) {
      const at = (dx: number, dy: number) => grey[(y + dy) * SIDE + x + dx];
      const gx = at(1, -1) + 2 * at(1, 0) + at(1, 1) - at(-1, -1) - 2 * at(-1, 0) - at(-1, 1);
      const gy = at(-1, 1) + 2 * at(0, 1) + at(1, 1) - at(-1, -1) - 2 * at(0, -1) - at(1, -1);
      const mag = Math.sqrt(gx * gx + gy * gy);
      if (mag < 40) continue;
      const ang = (Math.atan2(gy, gx) + Math.PI) % Math.PI;
      const bin = Math.min(7, Math.floor((ang / Math.PI) * 8));
      const q = (y < SIDE / 2 ? 0 : 2) + (x < SIDE / 2 ? 0 : 1);
      vector[e0 + q * 8 + bin] += mag;
    }
  let norm = 0;
  for (let i = 0; i < EDGES; i++) norm += vector[e0 + i] ** 2;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < EDGES; i++) vector[e0 + i] /= norm;
  return { vector, hash: dHash(grey) };
}

/** dHash: the grey image box-averaged to 9 × 8, one bit per horizontally adjacent pair. */
function dHash(grey: Float32Array): string {
  const cells = new Float64Array(72);
  for (let y = 0; y < SIDE; y++) {
    const cy = Math.floor((y * 8) / SIDE);
    for (let x = 0; x < SIDE; x++) cells[cy * 9 + Math.floor((x * 9) / SIDE)] += grey[y * SIDE + x];
  }
  let bits = 0n;
  for (let y = 0; y < 8; y++)
    for (let x = 0; x < 8; x++) bits = (bits << 1n) | (cells[y * 9 + x] < cells[y * 9 + x + 1] ? 1n : 0n);
  return bits.toString(16).padStart(16, '0');
}

/** a 16-hex-digit hash as two 32-bit words (NaN-free: '' → 0, flagged by the caller) */
function hashWords(hash: string): [number, number] {
  return [Number.parseInt(hash.slice(0, 8), 16) >>> 0, Number.parseInt(hash.slice(8, 16), 16) >>> 0];
}

function popcount32(v: number): number {
  let x = v - ((v >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** the weights of the local similarity's parts */
export const LOCAL_WEIGHTS = { histogram: 0.45, layout: 0.2, edges: 0.2, hash: 0.15 } as const;

/** local similarity of x (at xo) and y (at yo), with the hash agreement (0-1) given */
function localAt(x: Float32Array, xo: number, y: Float32Array, yo: number, hashAgreement: number): number {
  let hist = 0;
  for (let i = 0; i < HIST; i++) {
    hist += Math.min(x[xo + i], y[yo + i]);
  }
  let sq = 0;
  for (let i = HIST; i < HIST + LAYOUT; i++) {
    const d = x[xo + i] - y[yo + i];
    sq += d * d;
  }
  const layout = Math.max(0, 1 - 4 * Math.sqrt(sq / LAYOUT));
  let dot = 0;
  for (let i = HIST + LAYOUT; i < LOCAL_DIMS; i++) dot += x[xo + i] * y[yo + i];
  return (
    LOCAL_WEIGHTS.histogram * Math.min(1, hist) +
    LOCAL_WEIGHTS.layout * layout +
    LOCAL_WEIGHTS.edges * Math.min(1, dot) +
    LOCAL_WEIGHTS.hash * hashAgreement
  );
}

/** parsed hashes of feature objects (pairwise comparisons parse each once) */
const parsedHashes = new WeakMap<ImageFeatures, [number, number]>();
function wordsOf(f: ImageFeatures): [number, number] {
  let w = parsedHashes.get(f);
  if (!w) parsedHashes.set(f, (w = hashWords(f.hash)));
  return w;
}

function hashAgreement(a: ImageFeatures, b: ImageFeatures): number {
  if (!a.hash || !b.hash) return 0;
  const [ah, al] = wordsOf(a);
  const [bh, bl] = wordsOf(b);
  return 1 - (popcount32(ah ^ bh) + popcount32(al ^ bl)) / 64;
}

export function localSimilarity(a: ImageFeatures, b: ImageFeatures): number {
  if (a.model !== LOCAL_MODEL || b.model !== LOCAL_MODEL) return 0;
  if (a.vector.length !== LOCAL_DIMS || b.vector.length !== LOCAL_DIMS) return 0;
  return localAt(a.vector, 0, b.vector, 0, hashAgreement(a, b));
}

/**
 * Many images' features of one model in flat arrays, compared with a query in one pass (image search
 * over a store's catalog: for local-v1 no per-image objects, no hash parsing on the request path).
 */
export class FeatureMatrix {
  readonly model: string;
  readonly size: number;
  private readonly dims: number;
  private readonly vectors: Float32Array;
  private readonly hi: Uint32Array;
  private readonly lo: Uint32Array;
  private readonly hashed: Uint8Array;
  private readonly rows: readonly ImageFeatures[];

  constructor(model: string, rows: readonly ImageFeatures[]) {
    this.model = model;
    this.rows = rows;
    this.size = rows.length;
    this.dims = rows[0]?.vector.length ?? 0;
    this.vectors = new Float32Array(this.size * this.dims);
    this.hi = new Uint32Array(this.size);
    this.lo = new Uint32Array(this.size);
    this.hashed = new Uint8Array(this.size);
    rows.forEach((f, i) => {
      if (f.vector.length === this.dims) this.vectors.set(f.vector, i * this.dims);
      if (f.hash) {
        [this.hi[i], this.lo[i]] = hashWords(f.hash);
        this.hashed[i] = 1;
      }
    });
  }

  /** row i's vector as a view of the matrix (null when the row had another shape and was left out) */
  rowView(i: number): Float32Array | null {
    const f = this.rows[i];
    if (!f || f.vector.length !== this.dims) return null;
    return this.vectors.subarray(i * this.dims, (i + 1) * this.dims);
  }

  /** coarse local descriptors (12 hues + 4 greys, 2 × 2 Lab layout), built on the first search */
  private coarse: Float32Array | null = null;

  private coarseOf(v: Float32Array, off: number, out: Float32Array, at: number): void {
    for (let i = 0; i < COARSE; i++) out[at + i] = 0;
    for (let h = 0; h < HUES; h++) {
      let sum = 0;
      for (let k = 0; k < 9; k++) sum += v[off + h * 9 + k];
      out[at + h] = sum;
    }
    for (let g = 0; g < 4; g++) out[at + HUES + g] = v[off + HUES * 9 + g];
    // 4 × 4 layout cells → 2 × 2 quadrants, mean Lab each
    for (let cell = 0; cell < 16; cell++) {
      const q = (Math.floor(cell / 8) * 2 + Math.floor((cell % 4) / 2)) * 3;
      for (let c = 0; c < 3; c++) out[at + 16 + q + c] += v[off + HIST + cell * 3 + c] / 4;
    }
  }

  /**
   * The similarity of the query to every row (0 for rows of another shape). With `shortlist`, local
   * features are compared in two passes: a coarse one over every row (colour by hue, a 2 × 2 layout:
   * 28 numbers), then the full comparison of the best `shortlist` rows only; the others answer -1.
   */
  similarities(query: ImageFeatures, provider: ImageFeatureProvider, shortlist = 0): Float64Array {
    const out = new Float64Array(this.size);
    if (query.model !== this.model) return out;
    if (this.model !== LOCAL_MODEL) {
      for (let i = 0; i < this.size; i++) out[i] = provider.similarity(query, this.rows[i]);
      return out;
    }
    if (query.vector.length !== LOCAL_DIMS || this.dims !== LOCAL_DIMS) return out;
    const [qh, ql] = query.hash ? hashWords(query.hash) : [0, 0];
    const full = (i: number) => {
      const h = query.hash && this.hashed[i] ? 1 - (popcount32(qh ^ this.hi[i]) + popcount32(ql ^ this.lo[i])) / 64 : 0;
      return localAt(query.vector, 0, this.vectors, i * LOCAL_DIMS, h);
    };
    if (shortlist <= 0 || shortlist >= this.size) {
      for (let i = 0; i < this.size; i++) out[i] = full(i);
      return out;
    }
    if (!this.coarse) {
      const c = new Float32Array(this.size * COARSE);
      for (let i = 0; i < this.size; i++) this.coarseOf(this.vectors, i * LOCAL_DIMS, c, i * COARSE);
      this.coarse = c;
    }
    const qc = new Float32Array(COARSE);
    this.coarseOf(query.vector, 0, qc, 0);
    const c = this.coarse;
    const rough = new Float32Array(this.size);
    for (let i = 0; i < this.size; i++) {
      const o = i * COARSE;
      let hist = 0;
      for (let k = 0; k < 16; k++) {
        hist += Math.min(qc[k], c[o + k]);
      }
      let sq = 0;
      for (let k = 16; k < COARSE; k++) {
        const d = qc[k] - c[o + k];
        sq += d * d;
      }
      rough[i] = hist - 2 * Math.sqrt(sq);
    }
    const cut = kthLargest(rough, shortlist);
    out.fill(-1);
    for (let i = 0; i < this.size; i++) if (rough[i] >= cut) out[i] = full(i);
    return out;
  }
}

const COARSE = 28;

/** the k-th largest value (quickselect on a copy) */
function kthLargest(values: Float32Array, k: number): number {
  const a = Float32Array.from(values);
  let lo = 0;
  let hi = a.length - 1;
  const target = k - 1;
  while (lo < hi) {
    const pivot = a[(lo + hi) >> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] > pivot) i++;
      while (a[j] < pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else break;
  }
  return a[target];
}

/** The default provider: the local features above (no network, no model). */
export const localProvider: ImageFeatureProvider = {
  model: LOCAL_MODEL,
  async extract(bytes) {
    const { rgb } = await decodeImage(bytes);
    return { model: LOCAL_MODEL, ...localFeatures(rgb) };
  },
  similarity: localSimilarity,
};

/** What selects the provider (services/common/config.ts: IMAGE_FEATURES, IMAGE_MODEL_URL, IMAGE_MODEL, …). */
export interface ImageFeatureSettings {
  IMAGE_FEATURES: 'local' | 'http';
  IMAGE_MODEL_URL?: string;
  IMAGE_MODEL?: string;
  IMAGE_MODEL_TIMEOUT_MS?: number;
}

/**
 * The provider a deployment uses: `local-v1` (the default), or a learned model behind an HTTP embedding
 * service (IMAGE_FEATURES=http). Both the image processors and the read API call this with the same
 * configuration, so catalog features and query features come from the same model. A string selects by
 * model id (only `local-v1` is known by name).
 */
export function imageFeatureProvider(settings: string | ImageFeatureSettings = LOCAL_MODEL): ImageFeatureProvider {
  if (typeof settings === 'string') {
    if (settings === LOCAL_MODEL) return localProvider;
    throw new Error(`unknown image feature model ${JSON.stringify(settings)}; available: local-v1`);
  }
  if (settings.IMAGE_FEATURES === 'local') return localProvider;
  if (!settings.IMAGE_MODEL_URL || !settings.IMAGE_MODEL)
    throw new Error('IMAGE_FEATURES=http needs IMAGE_MODEL_URL and IMAGE_MODEL');
  return httpImageProvider({
    url: settings.IMAGE_MODEL_URL,
    model: settings.IMAGE_MODEL,
    timeoutMs: settings.IMAGE_MODEL_TIMEOUT_MS ?? 10_000,
  });
}

// ── a learned model behind HTTP ──

export type ImageModelErrorReason = 'unavailable' | 'timeout' | 'bad_response' | 'mismatch';

/**
 * The image model service could not describe an image (down, timing out, answering 5xx or something
 * that is not an embedding of the configured model). Never the image's fault: the read API answers 503,
 * the processors write the image with status `model_<reason>` and try it again on the next change.
 */
export class ImageModelError extends Error {
  readonly reason: ImageModelErrorReason;
  constructor(reason: ImageModelErrorReason, message: string) {
    super(message);
    this.name = 'ImageModelError';
    this.reason = reason;
  }
}

/** the largest embedding accepted from a model service */
export const MAX_EMBEDDING_DIMS = 8_192;
const MIME: Record<ImageFormat, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

/**
 * A learned model (a CLIP-style image encoder) behind an HTTP embedding service. Contract
 * (docs/storefront-api.md, "Image model service"):
 *
 *   POST <IMAGE_MODEL_URL>   content-type: image/jpeg | image/png | image/webp   body: the image's bytes
 *                            x-image-model: <IMAGE_MODEL> (the model the caller expects)
 *   200 application/json {"model": "<IMAGE_MODEL>", "embedding": [<finite numbers>, …]}
 *   400 / 413 / 415 / 422    the model refused the image (→ the image is not usable: 422 to a shopper)
 *   anything else            the service failed (→ 503; processors: status model_unavailable)
 *
 * The image is checked here first (size, format, a full decode: truncated, corrupt and decompression-bomb
 * images never reach the service). The embedding is stored L2-normalized with the model id; similarity is
 * the cosine (clamped to 0-1). An answer naming another model is refused (status model_mismatch): features of
 * two models are never stored under one name.
 */
export function httpImageProvider(o: { url: string; model: string; timeoutMs: number }): ImageFeatureProvider {
  return {
    model: o.model,
    async extract(bytes) {
      const { format } = await decodeImage(bytes);
      let res: Response;
      try {
        res = await fetch(o.url, {
          method: 'POST',
          headers: { 'content-type': MIME[format], accept: 'application/json', 'x-image-model': o.model },
          body: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
          signal: AbortSignal.timeout(o.timeoutMs),
        });
      } catch (err) {
        const e = err as Error;
        if (e.name === 'TimeoutError' || e.name === 'AbortError')
          throw new ImageModelError('timeout', `the image model service did not answer within ${o.timeoutMs} ms`);
        throw new ImageModelError('unavailable', `the image model service is unreachable (${e.message})`);
      }
      let text: string;
      try {
        text = await res.text();
      } catch (err) {
        throw new ImageModelError(
          'unavailable',
          `the image model service's answer broke off (${(err as Error).message})`,
        );
      }
      if ([400, 413, 415, 422].includes(res.status))
        throw new ImageError('undecodable', `the image model refused the image (${res.status}: ${text.slice(0, 200)})`);
      if (res.status !== 200)
        throw new ImageModelError('unavailable', `the image model service answered ${res.status}`);
      let body: { model?: unknown; embedding?: unknown };
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        throw new ImageModelError('bad_response', 'the image model service answered something other than JSON');
      }
      if (body?.model !== o.model)
        throw new ImageModelError(
          'mismatch',
          `the image model service answered for model ${JSON.stringify(body?.model)}; configured: ${JSON.stringify(o.model)}`,
        );
      const e = body.embedding;
      if (
        !Array.isArray(e) ||
        e.length === 0 ||
        e.length > MAX_EMBEDDING_DIMS ||
        !e.every((v) => typeof v === 'number' && Number.isFinite(v))
      )
        throw new ImageModelError(
          'bad_response',
          `the image model service's embedding is not 1-${MAX_EMBEDDING_DIMS} finite numbers`,
        );
      const vector = Float32Array.from(e as number[]);
      let norm = 0;
      for (const v of vector) norm += v * v;
      norm = Math.sqrt(norm);
      if (norm === 0) throw new ImageModelError('bad_response', "the image model service's embedding is all zeros");
      for (let i = 0; i < vector.length; i++) vector[i] /= norm;
      return { model: o.model, vector, hash: '' };
    },
    similarity: cosineSimilarity,
  };
}

/** cosine of two L2-normalized embeddings, clamped to 0-1 (0 for different models or lengths) */
export function cosineSimilarity(a: ImageFeatures, b: ImageFeatures): number {
  if (a.model !== b.model || a.vector.length !== b.vector.length || a.vector.length === 0) return 0;
  let dot = 0;
  for (let i = 0; i < a.vector.length; i++) dot += a.vector[i] * b.vector[i];
  return Math.max(0, Math.min(1, dot));
}

/** features ⇄ their stored form (Redis, ClickHouse rows) */
export function featuresToJson(f: ImageFeatures): { model: string; vector: number[]; hash: string } {
  return { model: f.model, vector: Array.from(f.vector, (v) => Math.round(v * 1e6) / 1e6), hash: f.hash };
}

export function featuresFromJson(o: { model: string; vector: number[]; hash: string }): ImageFeatures {
  return { model: o.model, vector: Float32Array.from(o.vector), hash: o.hash };
}
