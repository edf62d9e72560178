// The `Link` response header: image preload hints for the first products of a result page, so the
// browser fetches the product images while the storefront renders (reference notes §9b).
//
// At most 6 products, each its featured image (a variant tile: its variant's image; an image once) as
//   <src>; rel=preload; as=image; fetchpriority=high; imagesrcset="<src?width=360> 360w, …"[; imagesizes="…"]
// Widths: the request's responseOptions.mediaPreloads.srcsetSizes, else the store's srcset sizes (default
// 360, 540, 720, 900, 1080). Sent unless the store disabled preloads or the request sent enabled: false
// (a request cannot enable what the store disabled). With `rewrite_urls` and a `rewrite_domain`, image
// URLs are rewritten to that host (a storefront serving its CDN under its own domain).
import type { StoreRecord } from '../../store-config/api.ts';
import type { ResultFields } from '../../../schemas/storefront.ts';

export const MAX_PRELOADS = 6;

export function preloadSettings(
  store: StoreRecord,
  options: ResultFields['responseOptions'],
): { srcsetSizes: number[]; sizes: string | null } | null {
  const mp = store.mediaPreloads;
  if (!mp.enabled || options?.mediaPreloads?.enabled === false) return null;
  return {
    srcsetSizes: options?.mediaPreloads?.srcsetSizes ?? mp.srcsetSizes,
    sizes: options?.mediaPreloads?.sizes ?? null,
  };
}

function withWidth(src: string, width: number): string {
  try {
    const u = new URL(src);
    u.searchParams.set('width', String(width));
    return u.toString();
  } catch {
    return `${src}${src.includes('?') ? '&' : '?'}width=${width}`;
  }
}

function rewrite(src: string, store: StoreRecord): string {
  const { rewriteUrls, rewriteDomain } = store.mediaPreloads;
  if (!rewriteUrls || !rewriteDomain) return src;
  try {
    const u = new URL(src);
    u.host = rewriteDomain;
    return u.toString();
  } catch {
    return src;
  }
}

const quoted = (s: string) => s.replace(/["\\\r\n]/g, '');

/**
 * One image's hint, remembered: the URL work (a parse and a serialization per srcset width) was ≈ 4 % of
 * a computed browse answer in a profile of the demo store, for the same few hundred images again and
 * again. Bounded; cleared whole when full.
 */
const hintCache = new Map<string, string>();
const HINT_CACHE_MAX = 10_000;

function hint(raw: string, store: StoreRecord, settings: { srcsetSizes: number[]; sizes: string | null }): string {
  const { rewriteUrls, rewriteDomain } = store.mediaPreloads;
  const key = `${raw}\u0000${rewriteUrls && rewriteDomain ? rewriteDomain : ''}\u0000${settings.srcsetSizes.join(',')}\u0000${settings.sizes ?? ''}`;
  let part = hintCache.get(key);
  if (part === undefined) {
    const src = rewrite(raw, store);
    const srcset = settings.srcsetSizes.map((w) => `${withWidth(src, w)} ${w}w`).join(', ');
    part = `<${encodeURI(decodeURI(src))}>; rel=preload; as=image; fetchpriority=high; imagesrcset="${quoted(srcset)}"`;
    if (settings.sizes) part += `; imagesizes="${quoted(settings.sizes)}"`;
    if (hintCache.size >= HINT_CACHE_MAX) hintCache.clear();
    hintCache.set(key, part);
  }
  return part;
}

/** The Link header value for the page's images (first 6), or null when there is nothing to send. */
export function linkHeader(
  images: readonly (string | null)[],
  store: StoreRecord,
  settings: { srcsetSizes: number[]; sizes: string | null },
): string | null {
  const parts: string[] = [];
  // one hint per image: products and variant tiles often share one (a browser fetches it once anyway and
  // warns about a preload it did not need)
  const seen = new Set<string>();
  for (const raw of images.slice(0, MAX_PRELOADS)) {
    if (!raw) continue;
    const part = hint(raw, store, settings);
    if (seen.has(part)) continue;
    seen.add(part);
    parts.push(part);
  }
  return parts.length ? parts.join(', ') : null;
}
