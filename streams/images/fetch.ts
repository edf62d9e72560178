// Fetching and describing catalog images for the image-features processors: HTTP(S) GET with a timeout
// and a size cap, decoded and described by the shared feature provider (services/common/image-features.ts).
// Nothing here throws: every image ends with a status (`ok` or why not), counted per status, so one bad
// image or host never fails or stalls a chunk. Within one chunk a host that failed several times in a row
// is skipped for the rest of the chunk (`host_skipped`), which bounds a chunk's time when a host is down.
// Described images are cached by URL (an LRU, one hour), so a URL shared by many records (and a
// re-delivered record) is fetched once. With a learned model behind HTTP (IMAGE_FEATURES=http) a failing
// model service gives `model_unavailable` / `model_timeout` / `model_bad_response` / `model_mismatch`
// (never cached); after `hostFailures` of them in a row the model is not called again for the rest of the
// chunk (`model_skipped`), which bounds a chunk's time while the service is down.
import {
  type ImageFeatureProvider,
  type ImageFeatures,
  ImageError,
  ImageModelError,
  MAX_IMAGE_BYTES,
} from '../../services/common/image-features.ts';
import { counter } from '../../services/common/metrics.ts';

export interface DescribedImage {
  src: string;
  status: string;
  features: ImageFeatures | null;
}

export interface FetchOptions {
  /** per image (connect + body), ms; default 5 000 */
  timeoutMs?: number;
  /** images fetched at once; default 4 */
  concurrency?: number;
  /** bytes at most; default 15 MB */
  maxBytes?: number;
  /** consecutive failures after which a host is skipped for the rest of the chunk; default 5 */
  hostFailures?: number;
  /** cached URLs at most; default 20 000 */
  cacheSize?: number;
  cacheTtlMs?: number;
}

const images = counter('image_features_images_total', 'Catalog images described by the image processors, by status', [
  'status',
]);

/** statuses that say the host is unreachable or failing (they count toward skipping it) */
const HOST_FAILURE = /^(timeout|network_error|http_5\d\d)$/;
/** statuses that say the image model service failed (never the image's fault: not cached) */
const MODEL_FAILURE = /^model_/;

export class ImageDescriber {
  private readonly provider: ImageFeatureProvider;
  private readonly o: Required<FetchOptions>;
  private readonly cache = new Map<string, { at: number; value: DescribedImage }>();

  constructor(provider: ImageFeatureProvider, opts: FetchOptions = {}) {
    this.provider = provider;
    this.o = {
      timeoutMs: opts.timeoutMs ?? 5_000,
      concurrency: opts.concurrency ?? 4,
      maxBytes: opts.maxBytes ?? MAX_IMAGE_BYTES,
      hostFailures: opts.hostFailures ?? 5,
      cacheSize: opts.cacheSize ?? 20_000,
      cacheTtlMs: opts.cacheTtlMs ?? 60 * 60 * 1000,
    };
  }

  get model(): string {
    return this.provider.model;
  }

  /** Describe every URL (each once), in parallel up to the concurrency; a map URL → result. */
  async describeAll(urls: Iterable<string>): Promise<Map<string, DescribedImage>> {
    const out = new Map<string, DescribedImage>();
    const todo: string[] = [];
    const now = Date.now();
    for (const url of urls) {
      if (out.has(url)) continue;
      const hit = this.cache.get(url);
      if (hit && now - hit.at < this.o.cacheTtlMs) {
        out.set(url, hit.value);
        // LRU: most recently used last
        this.cache.delete(url);
        this.cache.set(url, hit);
      } else {
        out.set(url, { src: url, status: 'pending', features: null });
        todo.push(url);
      }
    }
    const failures = new Map<string, number>();
    let modelFailures = 0;
    let next = 0;
    const worker = async () => {
      while (next < todo.length) {
        const url = todo[next++];
        const host = hostOf(url);
        let r: DescribedImage;
        if (host && (failures.get(host) ?? 0) >= this.o.hostFailures)
          r = { src: url, status: 'host_skipped', features: null };
        else if (modelFailures >= this.o.hostFailures) r = { src: url, status: 'model_skipped', features: null };
        else {
          r = await this.describe(url);
          if (host) failures.set(host, HOST_FAILURE.test(r.status) ? (failures.get(host) ?? 0) + 1 : 0);
          modelFailures = MODEL_FAILURE.test(r.status) ? modelFailures + 1 : r.status === 'ok' ? 0 : modelFailures;
        }
        images.inc({ status: r.status });
        out.set(url, r);
        // failures of the host or the model are not cached: the next chunk tries again
        if (
          r.status === 'ok' ||
          (!HOST_FAILURE.test(r.status) && !MODEL_FAILURE.test(r.status) && r.status !== 'host_skipped')
        )
          this.remember(url, r);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.o.concurrency, todo.length) }, worker));
    return out;
  }

  private remember(url: string, r: DescribedImage): void {
    this.cache.set(url, { at: Date.now(), value: r });
    while (this.cache.size > this.o.cacheSize) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }

  /** Fetch and describe one image; never throws. */
  async describe(url: string): Promise<DescribedImage> {
    const fail = (status: string): DescribedImage => ({ src: url, status, features: null });
    if (!/^https?:\/\//i.test(url)) return fail('unsupported_url');
    let bytes: Buffer;
    try {
      bytes = await fetchBytes(url, this.o.timeoutMs, this.o.maxBytes);
    } catch (err) {
      const e = err as Error & { status?: string };
      return fail(e.status ?? (e.name === 'TimeoutError' || e.name === 'AbortError' ? 'timeout' : 'network_error'));
    }
    try {
      return { src: url, status: 'ok', features: await this.provider.extract(bytes) };
    } catch (err) {
      if (err instanceof ImageModelError) return fail(`model_${err.reason}`);
      return fail(err instanceof ImageError ? err.reason : 'undecodable');
    }
  }
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
}

function failure(status: string): Error & { status: string } {
  return Object.assign(new Error(status), { status });
}

/** GET with one deadline for headers and body, refusing more than maxBytes (declared or streamed). */
export async function fetchBytes(url: string, timeoutMs: number, maxBytes: number): Promise<Buffer> {
  const signal = AbortSignal.timeout(timeoutMs);
  const res = await fetch(url, { signal, redirect: 'follow', headers: { accept: 'image/*' } });
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw failure(`http_${res.status}`);
  }
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw failure('too_large');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  if (!res.body) return Buffer.alloc(0);
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > maxBytes) throw failure('too_large');
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
