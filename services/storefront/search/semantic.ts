// "Semantic" similarity without a model download. No embedding model can be fetched on the machines this
// runs on, so similarity goes through a provider interface; a deployment with an embedding service plugs
// one in (module wiring) and nothing else changes.
//
// The local default, `CooccurrenceProvider`, is an approximation built from what the store already has:
// a text is a sparse vector of its analyzed terms (analyze.ts, so inflections meet) plus the products
// shoppers chose after searching it (learned.ts, weighted by engagement share). Two queries are close when
// they share words or lead shoppers to the same products: "trainers" and "sneakers" meet once shoppers
// who typed either bought the same shoes, with no synonym configured. It knows nothing of meaning beyond
// that: unrelated words with no shared behaviour score 0.
import { terms } from './analyze.ts';
import type { StoreLearned } from './learned.ts';
import { queryKey } from './analyze.ts';

export interface SemanticProvider {
  readonly name: string;
  /** cosine-like similarity in [0, 1] */
  similarity(a: string, b: string, learned: StoreLearned | null): number;
}

type Vector = Map<string, number>;

function vectorOf(text: string, learned: StoreLearned | null): Vector {
  const v: Vector = new Map();
  for (const t of terms(text)) v.set(`t:${t}`, 1);
  const products = learned?.byKey.get(queryKey(text));
  if (products?.length) {
    const total = products.reduce((s, p) => s + p.engagement, 0) || 1;
    // behaviour weighs as much as the words together
    const scale = Math.max(1, v.size);
    for (const p of products) v.set(`p:${p.productId}`, (scale * p.engagement) / total);
  }
  return v;
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
    return cosine(vectorOf(a, learned), vectorOf(b, learned));
  }
}

/** similarity at or above this makes a `semantic` redirect term match a query */
export const SEMANTIC_REDIRECT_THRESHOLD = 0.8;
