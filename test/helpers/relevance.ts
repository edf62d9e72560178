// Relevance measurement on planted truth, shared by the test floor (test/stack/search-relevance.test.ts)
// and the bench (bench/search.ts): nDCG@k with graded judgements (engaged products 2, other relevant
// products 1), computed from what the search API answered.

export interface Judged {
  query: string;
  kind: string;
  /** product ids judged relevant (grade 1) */
  relevant: readonly string[];
  /** product ids shoppers preferred (grade 2; a subset of the relevant ones or on their own) */
  engaged: readonly string[];
}

const gain = (grade: number) => 2 ** grade - 1;
const discount = (rank: number) => 1 / Math.log2(rank + 2);

/** nDCG@k of a ranked list of product ids against graded judgements (1 when perfect, 0 when none relevant) */
export function ndcgAt(k: number, ranked: readonly string[], judged: Pick<Judged, 'relevant' | 'engaged'>): number {
  const grades = new Map<string, number>();
  for (const id of judged.relevant) grades.set(id, 1);
  for (const id of judged.engaged) grades.set(id, 2);
  let dcg = 0;
  ranked.slice(0, k).forEach((id, i) => {
    dcg += gain(grades.get(id) ?? 0) * discount(i);
  });
  const ideal = [...grades.values()].sort((a, b) => b - a).slice(0, k);
  let idcg = 0;
  ideal.forEach((g, i) => {
    idcg += gain(g) * discount(i);
  });
  return idcg > 0 ? dcg / idcg : 0;
}

export interface RelevanceReport {
  /** mean nDCG@10 over all queries */
  ndcg: number;
  byKind: Record<string, { queries: number; ndcg: number }>;
  perQuery: { query: string; kind: string; ndcg: number }[];
}

/** Run every judged query through `search` (product ids of the first page, best first) and score it. */
export async function evaluate(
  judged: readonly Judged[],
  search: (query: string) => Promise<string[]>,
  k = 10,
): Promise<RelevanceReport> {
  const perQuery: RelevanceReport['perQuery'] = [];
  for (const j of judged) perQuery.push({ query: j.query, kind: j.kind, ndcg: ndcgAt(k, await search(j.query), j) });
  const byKind: RelevanceReport['byKind'] = {};
  for (const q of perQuery) {
    const e = (byKind[q.kind] ??= { queries: 0, ndcg: 0 });
    e.queries++;
    e.ndcg += q.ndcg;
  }
  for (const e of Object.values(byKind)) e.ndcg /= e.queries;
  const ndcg = perQuery.length ? perQuery.reduce((s, q) => s + q.ndcg, 0) / perQuery.length : 0;
  return { ndcg, byKind, perQuery };
}
