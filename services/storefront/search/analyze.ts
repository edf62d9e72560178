// Text analysis shared by the product text index, query understanding and the learned-signal lookup: one
// analyzer, so a query term and an indexed term meet in the same form.
//
// text → normalizeQuery (NFKC, lower case, whitespace) → accents folded → tokens (letters and digits;
// a hyphenated word yields its joined form, and its parts when none is a single letter: "crew-neck" →
// "crew", "neck", "crewneck"; "t-shirt" → "tshirt") → stop words and
// one-letter tokens dropped → Porter stem (singular and plural collapse: "dresses" → "dress",
// "shirts" → "shirt").
import { stemmer } from 'stemmer';
import { normalizeQuery } from '../../../schemas/fields.ts';

const STOP = new Set([
  'a',
  'an',
  'and',
  'the',
  'for',
  'with',
  'of',
  'in',
  'on',
  'to',
  'by',
  'my',
  'me',
  'i',
  'or',
  'at',
  'is',
  'it',
  'this',
  'that',
]);

const MARKS = /\p{M}+/gu;
const WORD = /[\p{L}\p{N}]+(?:-[\p{L}\p{N}]+)*/gu;

/** lower case, NFKC, accents folded, whitespace collapsed */
export function foldText(text: string): string {
  const n = normalizeQuery(text);
  // NFD splits accented letters into letter + mark; ASCII needs none of it
  return /^[\x20-\x7e]*$/.test(n) ? n : n.normalize('NFD').replace(MARKS, '').normalize('NFC');
}

/** the words of folded text, hyphenated words joined as well as split */
export function words(folded: string): string[] {
  const out: string[] = [];
  for (const m of folded.matchAll(WORD)) {
    const w = m[0];
    if (w.includes('-')) {
      // "crew-neck" → crew, neck, crewneck; "t-shirt" → tshirt only (a one-letter part is a prefix, not a word:
      // a search for shirts should not find every t-shirt)
      const parts = w.split('-');
      if (parts.every((p) => p.length > 1)) out.push(...parts);
      out.push(parts.join(''));
    } else out.push(w);
  }
  return out;
}

const stemCache = new Map<string, string>();
/** the index form of one folded word (Porter stem; numbers as they are) */
export function stem(word: string): string {
  let s = stemCache.get(word);
  if (s === undefined) {
    s = /^\p{N}+$/u.test(word) ? word : stemmer(word);
    if (stemCache.size > 200_000) stemCache.clear();
    stemCache.set(word, s);
  }
  return s;
}

export const isStopWord = (word: string): boolean => STOP.has(word);

/** a word that carries meaning: not a stop word, not a single letter */
export const isContentWord = (word: string): boolean => !STOP.has(word) && (word.length > 1 || /\p{N}/u.test(word));

/** the index terms of a text (stems of its content words, in order, repeats kept) */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const w of words(foldText(text))) if (isContentWord(w)) out.push(stem(w));
  return out;
}

/** the analyzed key of a query: its distinct terms in order, joined ("Linen Shirts" → "linen shirt") */
export function queryKey(text: string): string {
  return [...new Set(terms(text))].join(' ');
}

/** plain text of HTML (tags dropped, common entities decoded) */
export function htmlText(html: string): string {
  if (!html) return '';
  return html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
}

/** Damerau-Levenshtein (optimal string alignment) distance, giving up above `max` */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const n = b.length;
  let prev2 = new Array<number>(n + 1).fill(0);
  let prev = Array.from({ length: n + 1 }, (_, j) => j);
  let cur = new Array<number>(n + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = cur[0];
    for (let j = 1; j <= n; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      let v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, prev2[j - 2] + 1);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    [prev2, prev, cur] = [prev, cur, prev2];
  }
  return prev[n];
}
