// Relevance and recommendation quality against the demo store's planted ground truth, as numbers
// (tests and `npm run bench` use these). Each evaluator takes the system under test as a function, so the
// same measure applies to an aggregate read over SQL, a storefront endpoint or an in-process index.
import type { GroundTruth } from './generator.ts';
import { imageName, parseImageName, patternVisible } from './images.ts';

export function precisionAtK(ranked: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  if (k <= 0) return 0;
  let hits = 0;
  for (const id of ranked.slice(0, k)) if (relevant.has(id)) hits++;
  return hits / k;
}

export function recallAtK(ranked: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  if (relevant.size === 0) return 1;
  let hits = 0;
  for (const id of ranked.slice(0, k)) if (relevant.has(id)) hits++;
  return hits / relevant.size;
}

/** nDCG@k with graded gains (missing = 0) */
export function ndcgAtK(ranked: readonly string[], gains: ReadonlyMap<string, number>, k: number): number {
  const dcg = (list: readonly number[]) => list.slice(0, k).reduce((s, g, i) => s + (2 ** g - 1) / Math.log2(i + 2), 0);
  const ideal = dcg([...gains.values()].sort((a, b) => b - a));
  return ideal === 0 ? 0 : dcg(ranked.map((id) => gains.get(id) ?? 0)) / ideal;
}

export const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** The other members of a product's planted co-view cluster should be its nearest co-viewed products. */
export async function coViewQuality(
  gt: GroundTruth,
  related: (productId: string) => Promise<string[]>,
  k = 4,
): Promise<{ recall: number; products: number }> {
  const scores: number[] = [];
  for (const c of gt.coViewClusters) {
    for (const id of c.productIds) {
      const others = new Set(c.productIds.filter((x) => x !== id));
      scores.push(recallAtK(await related(id), others, Math.max(k, others.size)));
    }
  }
  return { recall: mean(scores), products: scores.length };
}

/** The other products of a planted bundle should be what is bought together with each of them. */
export async function bundleQuality(
  gt: GroundTruth,
  boughtWith: (productId: string) => Promise<string[]>,
  k = 4,
): Promise<{ recall: number; products: number }> {
  const scores: number[] = [];
  for (const b of gt.bundles) {
    for (const id of b.productIds) {
      const others = new Set(b.productIds.filter((x) => x !== id));
      scores.push(recallAtK(await boughtWith(id), others, Math.max(k, others.size)));
    }
  }
  return { recall: mean(scores), products: scores.length };
}

/** Search quality on the planted queries: precision@k over the relevant set, nDCG@k with engaged = 2, relevant = 1. */
export async function searchQuality(
  gt: GroundTruth,
  search: (query: string) => Promise<string[]>,
  k = 10,
): Promise<{ precision: number; ndcg: number; queries: number }> {
  const p: number[] = [];
  const n: number[] = [];
  for (const q of gt.queries) {
    const ranked = await search(q.query);
    const relevant = new Set(q.relevant);
    const gains = new Map<string, number>(q.relevant.map((id) => [id, 1]));
    for (const id of q.engaged) gains.set(id, 2);
    p.push(precisionAtK(ranked, relevant, Math.min(k, relevant.size)));
    n.push(ndcgAtK(ranked, gains, k));
  }
  return { precision: mean(p), ndcg: mean(n), queries: p.length };
}

export interface RelevanceReport {
  /** mean nDCG@k over every query of the evaluation */
  ndcg: number;
  byKind: Record<string, { queries: number; ndcg: number }>;
  perQuery: { query: string; kind: string; ndcg: number }[];
}

/**
 * Search relevance on the evaluation set (`searchEval`: exact, plural, misspelled, synonym, multi-word and
 * learned queries): nDCG@k with engaged = 2, relevant = 1, overall and per kind.
 */
export async function searchEvalQuality(
  gt: GroundTruth,
  search: (query: string) => Promise<string[]>,
  k = 10,
): Promise<RelevanceReport> {
  const perQuery: RelevanceReport['perQuery'] = [];
  for (const e of gt.searchEval) {
    const gains = new Map<string, number>(e.relevant.map((id) => [id, 1]));
    for (const id of e.engaged) gains.set(id, 2);
    perQuery.push({ query: e.query, kind: e.kind, ndcg: ndcgAtK(await search(e.query), gains, k) });
  }
  const byKind: RelevanceReport['byKind'] = {};
  for (const kind of new Set(perQuery.map((q) => q.kind))) {
    const scores = perQuery.filter((q) => q.kind === kind).map((q) => q.ndcg);
    byKind[kind] = { queries: scores.length, ndcg: mean(scores) };
  }
  return { ndcg: mean(perQuery.map((q) => q.ndcg)), byKind, perQuery };
}

/** 1-based rank of the planted trending query among `topQueries` (0 = absent). */
export function trendingRank(gt: GroundTruth, topQueries: readonly string[]): number {
  return topQueries.indexOf(gt.trending.query) + 1;
}

// ── image look-alikes ──
//
// The demo store's images are rendered from their names (images.ts: `<type>-<colour>-<pattern>.png`), and
// products of the same type share a name whenever they share a colour and pattern: every such group is a
// planted set of look-alikes (pixel-identical images), next to near misses that differ in pattern,
// colour or type only. Derived from the catalog as generated, so the generator's output is unchanged.

/**
 * The look of a demo image: its name, with the pattern dropped where the colour's patterns do not show
 * (`tshirt-black-3.png` looks like `tshirt-black-0.png`).
 */
export function lookalikeKey(name: string): string {
  const spec = parseImageName(name);
  return spec && !patternVisible(spec.color) ? imageName({ ...spec, pattern: 0 }) : name;
}

/**
 * Whether a generated product is on the storefront at `nowMs`: active, and published at or before it (the
 * generator also makes drafts, unpublished products and, among the newest, publications scheduled up to 3
 * days ahead; the storefront answers none of them).
 */
export function visibleAt(p: { status?: unknown; published_at?: unknown }, nowMs = Date.now()): boolean {
  const published = typeof p.published_at === 'string' ? Date.parse(p.published_at) : Number.NaN;
  return (p.status ?? 'active') === 'active' && published <= nowMs;
}

/** Image look (`lookalikeKey`) → the ids of the visible products holding it among their images (groups of ≥ 2). */
export function imageLookalikes(
  products: Iterable<{ id: unknown; status?: unknown; published_at?: unknown; images?: unknown }>,
  nowMs = Date.now(),
): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const p of products) {
    if (!visibleAt(p, nowMs)) continue;
    const images = (Array.isArray(p.images) ? p.images : []) as { src?: string | null }[];
    for (const name of new Set(images.map((im) => lookalikeKey((im.src ?? '').split('/').pop() ?? '')))) {
      if (!name) continue;
      const list = groups.get(name) ?? [];
      list.push(String(p.id));
      groups.set(name, list);
    }
  }
  for (const [name, ids] of groups) if (ids.length < 2) groups.delete(name);
  return groups;
}

/**
 * Image search quality: for each of up to `queries` look-alike groups (the largest first, ties by name),
 * search with a shopper's copy of the image (`search(name)` does the photographing) and measure
 * precision@k over the group, k = min(group size, 10): the look-alikes should come first.
 */
export async function imageSearchQuality(
  groups: ReadonlyMap<string, readonly string[]>,
  search: (imageName: string) => Promise<string[]>,
  queries = 20,
): Promise<{ precision: number; queries: number; perQuery: { image: string; size: number; precision: number }[] }> {
  const picked = [...groups].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1)).slice(0, queries);
  const perQuery: { image: string; size: number; precision: number }[] = [];
  for (const [name, ids] of picked) {
    const relevant = new Set(ids);
    perQuery.push({
      image: name,
      size: ids.length,
      precision: precisionAtK(await search(name), relevant, Math.min(10, relevant.size)),
    });
  }
  return { precision: mean(perQuery.map((q) => q.precision)), queries: perQuery.length, perQuery };
}
