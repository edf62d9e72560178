// Text handling for autocomplete: sanitizing what a shopper typed, the normalized form used for
// matching, tokens, stems (Porter, via `stemmer`) and character trigrams for similarity.
import { stemmer } from 'stemmer';
import { normalizeQuery as normalizeSanitized } from '../../../schemas/fields.ts';

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };

/**
 * Strip what is not query text: HTML/XML tags (after decoding the common entities, so `&lt;b&gt;` goes
 * too), stray angle brackets, control and zero-width characters; NFKC-fold; collapse whitespace; trim.
 */
const PLAIN = /^[\x20-\x7E]*$/;
const NOISE = /[<>&]/;

export function sanitizeQuery(raw: string): string {
  // fast path: printable ASCII without markup characters (NFKC is the identity on it)
  if (PLAIN.test(raw) && !NOISE.test(raw)) return raw.replace(/ {2,}/g, ' ').trim();
  let s = raw.normalize('NFKC');
  s = s.replace(/&(#39|amp|lt|gt|quot|apos|nbsp);/gi, (_, e: string) => ENTITIES[e.toLowerCase()] ?? ' ');
  s = s.replace(/&#(\d{1,7});/g, (_, d: string) => {
    const n = Number(d);
    return n >= 32 && n <= 0x10ffff ? String.fromCodePoint(n) : ' ';
  });
  s = s.replace(/<\/?[A-Za-z!?][^<>]*>/g, ' ');
  s = s.replace(/[<>]/g, ' ');
  s = s.replace(/[\u0000-\u001F\u007F-\u009F]/g, ' ');
  s = s.replace(/[\u200B-\u200D\u2060\uFEFF\u00AD]/g, '');
  return s.replace(/\s+/g, ' ').trim();
}

/** code points, as the query limits count them (defined with the query schema) */
export { codePointLength } from '../../../schemas/storefront.ts';

/**
 * The matching form: markup stripped (`sanitizeQuery`, for what a shopper typed), then the one query
 * normalization of the platform (schemas/fields.ts), so a suggestion's key equals the trending key and
 * the term keys of redirects and curation.
 */
export function normalizeQuery(raw: string): string {
  return normalizeSanitized(sanitizeQuery(raw));
}

/** Words: runs of letters and digits (apostrophes inside a word are dropped: "men's" → "mens"). */
export function tokenize(normalized: string): string[] {
  return normalized
    .replace(/(\p{L})['’](\p{L})/gu, '$1$2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t.length > 0);
}

const stemCache = new Map<string, string>();

/** Porter stem of a lower-case word; words with digits and very short words stay as they are. */
export function stem(token: string): string {
  if (token.length <= 2 || /\d/.test(token)) return token;
  let s = stemCache.get(token);
  if (s === undefined) {
    s = stemmer(token);
    if (stemCache.size > 50_000) stemCache.clear();
    stemCache.set(token, s);
  }
  return s;
}

/** The stem key of a query: its words' stems joined by one space ("running shoes" → "run shoe"). */
export function stemKey(normalized: string): string {
  return tokenize(normalized).map(stem).join(' ');
}

/** Padded character trigrams of a word ("abc" → "  a", " ab", "abc", "bc "). */
export function trigrams(word: string): string[] {
  const p = `  ${word} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= p.length; i++) out.add(p.slice(i, i + 3));
  return [...out];
}

/** Dice coefficient of two trigram sets (2|A∩B| / (|A|+|B|)). */
export function dice(a: readonly string[], b: ReadonlySet<string> | readonly string[]): number {
  const set = b instanceof Set ? b : new Set(b as readonly string[]);
  let shared = 0;
  for (const g of a) if (set.has(g)) shared++;
  return (2 * shared) / (a.length + set.size);
}
