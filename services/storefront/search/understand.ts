// Query understanding: what a query means before it is matched. Runs in prepare (in the background, the
// result cached 15 minutes) and in execute when there is no prepared plan.
//
// 1. intent modifiers are read and taken out of the text: price ceilings and floors ("under 50",
//    "over $100", "between 20 and 40"), price sensitivity ("cheap", "affordable", "budget" → lower
//    prices rank higher; "luxury", "premium" → higher), sale interest ("sale", "discounted", "deal");
// 2. spelling: a word no product, synonym or learned query knows is replaced by the closest catalog word
//    (text-index.ts `correct`); the corrected query is reported as `query-replacement`;
// 3. expansions: configured synonyms (two-way groups and one-way term → synonyms, matched on analyzed
//    words, so "jumpers" meets "jumper") give alternative queries, at most 10 (`query-expansion`); the
//    original stays primary.
// The learned expansion (products shoppers chose after the query) is looked up at execute time
// (learned.ts), since it moves with the stream.
import type { ConfigPayload } from '../../../schemas/config.ts';
import { foldText, isContentWord, stem, words } from './analyze.ts';
import type { ProductTextIndex } from './text-index.ts';

export type IntentAction =
  | { type: 'price_max'; value: number; text: string }
  | { type: 'price_min'; value: number; text: string }
  | { type: 'price_sensitivity'; direction: 'lower' | 'higher'; text: string }
  | { type: 'sale_interest'; text: string };

export interface QueryPlan {
  /** the query as sent */
  query: string;
  /** folded (analyze.ts foldText) */
  normalized: string;
  /** what is matched against product text: corrected, rule-replaced, intent words taken out */
  text: string;
  corrections: { from: string; to: string }[];
  expansions: string[];
  intents: IntentAction[];
}

const NUMBER = String.raw`\$?\s?(\d{1,7}(?:[.,]\d{1,2})?)\s?(?:\$|usd|eur|€|£|dollars?|euros?)?`;
const INTENT_PATTERNS: { re: RegExp; make: (m: RegExpMatchArray) => IntentAction[] }[] = [
  {
    re: new RegExp(String.raw`\bbetween\s+${NUMBER}\s+(?:and|to|-)\s+${NUMBER}`, 'u'),
    make: (m) => {
      const a = num(m[1]);
      const b = num(m[2]);
      return [
        { type: 'price_min', value: Math.min(a, b), text: m[0] },
        { type: 'price_max', value: Math.max(a, b), text: m[0] },
      ];
    },
  },
  {
    re: new RegExp(String.raw`\b(?:under|below|less than|cheaper than|max|up to|upto|<)\s*${NUMBER}`, 'u'),
    make: (m) => [{ type: 'price_max', value: num(m[1]), text: m[0] }],
  },
  {
    re: new RegExp(String.raw`\b(?:over|above|more than|at least|min|>)\s*${NUMBER}`, 'u'),
    make: (m) => [{ type: 'price_min', value: num(m[1]), text: m[0] }],
  },
  {
    re: /\b(?:cheap|cheapest|affordable|budget|inexpensive|low cost|low-cost|bargain)\b/u,
    make: (m) => [{ type: 'price_sensitivity', direction: 'lower', text: m[0] }],
  },
  {
    re: /\b(?:luxury|premium|high end|high-end|designer)\b/u,
    make: (m) => [{ type: 'price_sensitivity', direction: 'higher', text: m[0] }],
  },
  {
    re: /\b(?:on sale|sale|discounted|discount|clearance|deals?)\b/u,
    make: (m) => [{ type: 'sale_interest', text: m[0] }],
  },
];
const num = (s: string) => Number(s.replace(',', '.'));

/** intent modifiers of a folded query, and the query without them */
export function readIntents(folded: string): { intents: IntentAction[]; rest: string } {
  let rest = folded;
  const intents: IntentAction[] = [];
  for (const p of INTENT_PATTERNS) {
    const m = rest.match(p.re);
    if (!m) continue;
    intents.push(...p.make(m));
    rest = `${rest.slice(0, m.index)} ${rest.slice((m.index ?? 0) + m[0].length)}`.replace(/\s+/g, ' ').trim();
  }
  // a query that is nothing but modifiers ("sale") keeps its text: it is also what shoppers typed
  return rest === '' ? { intents, rest: folded } : { intents, rest };
}

type Synonym = ConfigPayload<'synonym'>;

/** the synonym alternatives of a query: each configured phrase found in it replaced by its partners */
export function synonymExpansions(text: string, synonyms: readonly Synonym[], max = 10): string[] {
  const ws = words(text);
  const stems = ws.map((w) => stem(w));
  const out: string[] = [];
  const seen = new Set<string>([ws.join(' ')]);
  const add = (from: string, to: string) => {
    const phrase = words(foldText(from)).map((w) => stem(w));
    if (phrase.length === 0) return;
    for (let i = 0; i + phrase.length <= stems.length; i++) {
      if (!phrase.every((s, k) => stems[i + k] === s)) continue;
      const alt = [...ws.slice(0, i), to, ...ws.slice(i + phrase.length)].join(' ');
      if (!seen.has(alt) && out.length < max) {
        seen.add(alt);
        out.push(alt);
      }
    }
  };
  for (const s of synonyms) {
    if (s.type === 'two_way') {
      for (const from of s.terms) for (const to of s.terms) if (from !== to) add(from, to);
    } else for (const to of s.synonyms) add(s.term, to);
  }
  return out;
}

export interface UnderstandInput {
  query: string;
  synonyms: readonly Synonym[];
  text: ProductTextIndex;
  /** words the store knows besides product text (learned queries) */
  knownWords: ReadonlySet<string>;
  /** the learned index has evidence for this exact query: leave its words alone */
  learned: (text: string) => boolean;
}

export function understand(input: UnderstandInput): QueryPlan {
  const normalized = foldText(input.query);
  const { intents, rest } = readIntents(normalized);
  // spelling: only words that nothing knows
  const synonymWords = new Set<string>();
  for (const s of input.synonyms)
    for (const t of s.type === 'two_way' ? s.terms : [s.term, ...s.synonyms])
      for (const w of words(t)) synonymWords.add(w);
  const corrections: { from: string; to: string }[] = [];
  let text = rest;
  if (!input.learned(rest)) {
    const fixed = rest.split(' ').map((w) => {
      if (!isContentWord(w) || /\d/.test(w) || synonymWords.has(w) || input.knownWords.has(w)) return w;
      const parts = words(w);
      if (parts.some((p) => input.text.frequency(p) > 0)) return w;
      const to = input.text.correct(w);
      if (!to) return w;
      corrections.push({ from: w, to });
      return to;
    });
    text = fixed.join(' ');
  }
  return {
    query: input.query,
    normalized,
    text,
    corrections,
    expansions: synonymExpansions(text, input.synonyms),
    intents,
  };
}
