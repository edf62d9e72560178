// "Semantic" similarity without a model download. No embedding model can be fetched on the machines this
// runs on, so similarity goes through a provider interface; a deployment with an embedding service plugs
// one in (module wiring) and nothing else changes.
//
// The local default, `CooccurrenceProvider`, is an approximation built from what the store already has:
// two views of a text, compared separately and then blended.
//   words      its analyzed terms (analyze.ts, so inflections meet), cosine over term sets;
//   behaviour  the products shoppers chose after searching it (learned.ts), as a distribution of engagement
//              shares, cosine over distributions (so two identical distributions score 1 however spread).
// With behaviour on both sides (at least MIN_BEHAVIOUR_ENGAGEMENT each), similarity is
// 0.15·words + 0.85·behaviour: shoppers leading to the same products is stronger evidence than words, so
// "trainers" and "sneakers" meet (≥ 0.85, over the redirect threshold) once shoppers who typed either
// chose the same shoes, with no synonym configured and no shared stem. Otherwise it is the words alone.
// It knows nothing of meaning beyond that: unrelated words with no shared behaviour score 0, and thin
// behaviour (a single view) is not trusted to carry a redirect.
//
// A single vector of words and products (words and behaviour as one cosine) cannot do this: with
// behaviour weighed as much as the words, two one-word queries with no shared stem and identical
// behaviour score 0.5, never the 0.8 a semantic redirect needs.
import { queryKey, terms } from './analyze.ts';
import type { StoreLearned } from './learned.ts';

export interface SemanticProvider {
  readonly name: string;
  /** cosine-like similarity in [0, 1] */
  similarity(a: string, b: string, learned: StoreLearned | null): number;
}

type Vector = Map<string, number>;

/** behaviour counts once each side has at least this much engagement (views + 3·carts + 5·purchases) */
export const MIN_BEHAVIOUR_ENGAGEMENT = 3;
/** the share of behaviour in the blend when both sides have it */
const BEHAVIOUR_WEIGHT = 0.85;

function wordVector(text: string): Vector {
  const v: Vector = new Map();
  for (const t of terms(text)) v.set(t, 1);
  return v;
}

function behaviourVector(text: string, learned: StoreLearned | null): Vector | null {
  const products = learned?.byKey.get(queryKey(text));
  if (!products?.length) return null;
  const total = products.reduce((s, p) => s + p.engagement, 0);
  if (total < MIN_BEHAVIOUR_ENGAGEMENT) return null;
  return new Map(products.map((p) => [p.productId, p.engagement / total]));
}

function cosine(a: Vector, b: Vector): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (const [k, x] of a) {
    na += x * x;
    const y = b.get(k);
    if (y !== undefined) dot += x * y;
  }
  for (const y of b.values()) nb += y * y;
  return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
}

export class CooccurrenceProvider implements SemanticProvider {
  readonly name = 'cooccurrence';
  similarity(a: string, b: string, learned: StoreLearned | null): number {
    const words = cosine(wordVector(a), wordVector(b));
    const ba = behaviourVector(a, learned);
    const bb = ba && behaviourVector(b, learned);
    if (!ba || !bb) return words;
    return (1 - BEHAVIOUR_WEIGHT) * words + BEHAVIOUR_WEIGHT * cosine(ba, bb);
  }
}

/** similarity at or above this makes a `semantic` redirect term match a query */
export const SEMANTIC_REDIRECT_THRESHOLD = 0.8;
