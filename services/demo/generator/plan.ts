// The demo store's planted ground truth (co-view clusters, queries with their relevant products,
// bundles, the trending burst) and the session plan that plays it: one entry per session, in time order.
import {
  BUNDLE_TEMPLATES,
  BURST_LINE,
  COLORS,
  type ColorSpec,
  LEARNED_PHRASES,
  PRODUCT_TYPES,
  type ProductTypeSpec,
  SYNONYMS,
} from './vocab.ts';
import { DEFAULT_SESSIONS, type SessionKind, type GroundTruth, productIdOf, DAY, HOUR, MINUTE } from './model.ts';
import type { DemoBase } from './base.ts';

/** a session's part: `ref` indexes its structure; `ord` numbers the sessions of a learned query */
export type Plan = { kind: SessionKind; ref: number; ord?: number };

export interface DemoPlan {
  groundTruth: GroundTruth;
  planned: Plan[];
  sessionCount: number;
  startOf: (i: number) => number;
  byPop: number[];
  burstQuery: string;
  burstMembers: number[];
  clusters: GroundTruth['coViewClusters'];
  queries: GroundTruth['queries'];
  bundles: GroundTruth['bundles'];
  learnedQueries: GroundTruth['learnedQueries'];
}

export function demoPlan(base: DemoBase): DemoPlan {
  const {
    o,
    root,
    n,
    typeWeights,
    popularity,
    rankOf,
    burstType,
    burstIndexes,
    metas,
    sellable,
    visible,
    visibleByType,
  } = base;
  // --- ground truth and the session plan ---------------------------------------------------------
  const planRng = root.fork('plan');
  const S = o.sessions;
  const scale = S / DEFAULT_SESSIONS;
  // candidate products for planted structures: visible, in stock somewhere, not the head of popularity
  // (the head is viewed by noise sessions too) and not the burst line
  const headCut = Math.min(200, Math.floor(n * 0.02));
  const plantable = visible.filter((i) => rankOf[i] >= headCut && !burstIndexes.has(i));
  const plantableByType = new Map<ProductTypeSpec, number[]>(PRODUCT_TYPES.map((t) => [t, []]));
  for (const i of plantable) plantableByType.get(metas[i].type)?.push(i);
  const used = new Set<number>();
  /** `k` distinct products of `pool` not used by another planted structure (marks them used) */
  const take = (pool: number[], k: number) => {
    const out: number[] = [];
    // rejection sampling first (pools are large, few are used); the exact filter when that stalls
    for (let tries = 0; out.length < k && tries < 20 * k; tries++) {
      const i = pool[Math.floor(planRng.next() * pool.length)];
      if (i !== undefined && !used.has(i)) {
        used.add(i);
        out.push(i);
      }
    }
    if (out.length < k) {
      for (const i of planRng.sample(
        pool.filter((i) => !used.has(i)),
        k - out.length,
      )) {
        used.add(i);
        out.push(i);
      }
    }
    return out;
  };

  // co-view clusters: 4-5 products of one type (and colour where possible) compared in one session
  const clusterCount = Math.max(3, Math.min(40, Math.round(20 * scale)));
  const sessionsPerCluster = 8 + Math.max(0, Math.round(4 * Math.min(scale, 2)));
  const clusters: GroundTruth['coViewClusters'] = [];
  for (let c = 0; c < clusterCount; c++) {
    const type = planRng.weighted(PRODUCT_TYPES, typeWeights);
    const color = planRng.pick(COLORS);
    const sameType = (plantableByType.get(type) ?? []).filter((i) => !used.has(i));
    const sameColor = sameType.filter((i) => metas[i].colors.includes(color));
    const k = planRng.int(4, 5);
    const pool = sameColor.length >= k ? sameColor : sameType.length >= k ? sameType : plantable;
    const members = take(pool, k);
    if (members.length < 3) continue;
    clusters.push({ id: clusters.length, productIds: members.map(productIdOf), sessions: sessionsPerCluster });
  }

  // planted queries: "<material> <type>" and "<colour> <type>" with 3-60 matching products
  const queryCandidates: { query: string; type: ProductTypeSpec; attribute: string; members: number[] }[] = [];
  for (const t of PRODUCT_TYPES) {
    const byMaterial = new Map<string, number[]>(t.materials.map((m) => [m, []]));
    const byColor = new Map<ColorSpec, number[]>(COLORS.map((c) => [c, []]));
    for (const i of visibleByType.get(t) ?? []) {
      if (burstIndexes.has(i)) continue;
      byMaterial.get(metas[i].material)?.push(i);
      for (const c of metas[i].colors) byColor.get(c)?.push(i);
    }
    for (const mat of t.materials) {
      const members = byMaterial.get(mat) ?? [];
      queryCandidates.push({
        query: `${mat} ${planRng.chance(0.3) ? t.plural : t.name}`.toLowerCase(),
        type: t,
        attribute: mat,
        members,
      });
    }
    for (const col of COLORS) {
      queryCandidates.push({
        query: `${col.name} ${t.name}`.toLowerCase(),
        type: t,
        attribute: col.name,
        members: byColor.get(col) ?? [],
      });
    }
  }
  const maxRelevant = Math.max(60, Math.round(n / 150));
  const usable = queryCandidates.filter((q) => q.members.length >= 3 && q.members.length <= maxRelevant);
  const queryCount = Math.max(5, Math.min(60, Math.round(24 * scale)));
  const sessionsPerQuery = 10 + Math.max(0, Math.round(6 * Math.min(scale, 2)));
  const queries: GroundTruth['queries'] = planRng.sample(usable, queryCount).map((q) => {
    // the products shoppers prefer for this query: a few of the matches, in order of preference
    const engagedIdx = planRng.sample(q.members, Math.min(5, q.members.length));
    return {
      query: q.query,
      productType: q.type.name,
      attribute: q.attribute,
      relevant: q.members.map(productIdOf),
      engaged: engagedIdx.map(productIdOf),
      sessions: sessionsPerQuery,
    };
  });

  // bundles: complementary types bought together
  const bundleCount = Math.max(3, Math.min(30, Math.round(12 * scale)));
  const ordersPerBundle = 6 + Math.max(0, Math.round(6 * Math.min(scale, 2)));
  const bundles: GroundTruth['bundles'] = [];
  for (let b = 0; b < bundleCount; b++) {
    const template = BUNDLE_TEMPLATES[b % BUNDLE_TEMPLATES.length];
    const members: number[] = [];
    for (const typeSlug of template) {
      const pool = plantableByType.get(PRODUCT_TYPES.find((t) => t.slug === typeSlug) as ProductTypeSpec) ?? [];
      members.push(...take(pool.length ? pool : plantable, 1));
    }
    if (members.length >= 2)
      bundles.push({ id: bundles.length, productIds: members.map(productIdOf), orders: ordersPerBundle });
  }

  // learned queries: shopper phrases no product text contains, each leading its sessions to a few products
  // (drawn from their own random stream, so the structures above stay as they were)
  const learnedRng = root.fork('learned');
  const learnedQueries: GroundTruth['learnedQueries'] = LEARNED_PHRASES.map((query) => {
    const pool = plantable.filter((i) => !used.has(i));
    const members = learnedRng.sample(pool, Math.min(4, pool.length));
    for (const i of members) used.add(i);
    return { query, engaged: members.map(productIdOf), sessions: sessionsPerQuery };
  });

  // trending burst: many distinct sessions, all in the last `burstWindow` minutes, none before
  const burstMembers = [...burstIndexes];
  const burstQuery = `${BURST_LINE} ${burstType.plural}`.toLowerCase();
  const burstSessions = Math.max(25, Math.round(60 * Math.min(scale, 2)));
  const burstWindow = 45;
  const groundTruth: GroundTruth = {
    seed: o.seed,
    coViewClusters: clusters,
    queries,
    trending: {
      query: burstQuery,
      sessions: burstSessions,
      windowMinutes: burstWindow,
      relevant: burstMembers.map(productIdOf),
    },
    bundles,
    learnedQueries,
    searchEval: searchEvaluation(queries, learnedQueries, metas, visibleByType),
  };

  // the plan: one entry per session; planted sessions interleaved with browsing, in time order
  const planned: Plan[] = [];
  for (const c of clusters) for (let k = 0; k < c.sessions; k++) planned.push({ kind: 'cluster', ref: c.id });
  queries.forEach((q, qi) => {
    for (let k = 0; k < q.sessions; k++) planned.push({ kind: 'search', ref: qi });
  });
  for (const b of bundles) for (let k = 0; k < b.orders; k++) planned.push({ kind: 'bundle', ref: b.id });
  learnedQueries.forEach((q, qi) => {
    for (let k = 0; k < q.sessions; k++) planned.push({ kind: 'learned', ref: qi, ord: k });
  });
  const browseCount = Math.max(0, S - burstSessions - planned.length);
  for (let k = 0; k < browseCount; k++) planned.push({ kind: 'browse', ref: 0 });
  planRng.shuffle(planned);
  for (let k = 0; k < burstSessions; k++) planned.push({ kind: 'trending', ref: 0 });
  const sessionCount = planned.length;
  const regular = sessionCount - burstSessions;
  // regular sessions spread over the last 7 days up to 2 hours ago; the burst in the last 45 minutes
  const startOf = (i: number) => {
    if (i < regular) return -7 * DAY + Math.round(((7 * DAY - 2 * HOUR) * i) / Math.max(1, regular));
    return -burstWindow * MINUTE + Math.round(((burstWindow - 5) * MINUTE * (i - regular)) / burstSessions);
  };
  const byPop = popularity.filter((i) => sellable(metas[i]) && !burstIndexes.has(i));
  return {
    groundTruth,
    planned,
    sessionCount,
    startOf,
    byPop,
    burstQuery,
    burstMembers,
    clusters,
    queries,
    bundles,
    learnedQueries,
  };
}

/** one typo: the letter at position 2 doubled ("linen" → "linnen") */
const typo = (word: string) => `${word.slice(0, 3)}${word.slice(2)}`;

/**
 * The relevance evaluation set, derived from the planted queries (their relevant products are the ones
 * matching type and attribute, so every variant keeps the same judgements) and the learned queries.
 */
function searchEvaluation(
  queries: GroundTruth['queries'],
  learned: GroundTruth['learnedQueries'],
  metas: DemoBase['metas'],
  visibleByType: DemoBase['visibleByType'],
): GroundTruth['searchEval'] {
  const out: GroundTruth['searchEval'] = [];
  const typeOf = (name: string) => PRODUCT_TYPES.find((t) => t.name === name) as ProductTypeSpec;
  const synonymsOf = (t: ProductTypeSpec): string[] => {
    for (const s of SYNONYMS)
      if (s.type === 'two_way' && (s.terms as readonly string[]).includes(t.name.toLowerCase()))
        return (s.terms as readonly string[]).filter((x) => x !== t.name.toLowerCase() && !x.includes(t.slug));
    return [];
  };
  const PER_KIND = 6;
  const count = (kind: string) => out.filter((e) => e.kind === kind).length;
  const add = (e: GroundTruth['searchEval'][number]) => {
    if (count(e.kind) < PER_KIND && !out.some((x) => x.query === e.query)) out.push(e);
  };
  const visibleOf = (t: ProductTypeSpec, material: string, colour?: ColorSpec) =>
    (visibleByType.get(t) ?? [])
      .filter((i) => metas[i].material === material && (!colour || metas[i].colors.includes(colour)))
      .map(productIdOf);
  /** the material with the most products, among those no other material of the type contains */
  const commonest = (t: ProductTypeSpec) =>
    t.materials
      .filter((m) => !t.materials.some((o) => o !== m && o.toLowerCase().split(' ').includes(m.toLowerCase())))
      .sort((a, b) => visibleOf(t, b).length - visibleOf(t, a).length)[0];
  for (const q of queries) {
    const t = typeOf(q.productType);
    const attr = q.attribute.toLowerCase();
    // "cotton" also names the "Organic Cotton" products of the type: they are relevant to it too
    const wider = t.materials.filter((m) => m.toLowerCase() !== attr && m.toLowerCase().split(' ').includes(attr));
    const judged = {
      relevant: [...new Set([...q.relevant, ...wider.flatMap((m) => visibleOf(t, m))])],
      engaged: q.engaged,
    };
    add({ query: q.query, kind: 'exact', ...judged });
    const singular = `${attr} ${t.name.toLowerCase()}`;
    const plural = `${attr} ${t.plural.toLowerCase()}`;
    if (singular !== plural) add({ query: q.query === singular ? plural : singular, kind: 'plural', ...judged });
    const long = [attr, t.name.toLowerCase()].find((w) => /^[a-z]{5,}$/.test(w));
    if (long) add({ query: q.query.replace(long, typo(long)), kind: 'misspelled', ...judged });
  }
  // synonyms and three-word queries from the catalog itself (not every store plants those types): the
  // material with the most products of each type; judged by type, material (and colour) alone
  for (const t of PRODUCT_TYPES) {
    const syn = synonymsOf(t)[0];
    const material = commonest(t);
    if (!syn || !material || material.includes(' ')) continue;
    const ids = visibleOf(t, material);
    if (ids.length >= 3)
      add({ query: `${material.toLowerCase()} ${syn}`, kind: 'synonym', relevant: ids, engaged: [] });
  }
  for (const t of [...PRODUCT_TYPES].sort((a, b) => b.weight - a.weight)) {
    const material = commonest(t);
    if (!material || material.includes(' ') || t.name.includes(' ')) continue;
    const colour = [...COLORS].sort((a, b) => visibleOf(t, material, b).length - visibleOf(t, material, a).length)[0];
    const ids = visibleOf(t, material, colour);
    if (ids.length >= 3)
      add({
        query: `${colour.name} ${material} ${t.plural}`.toLowerCase(),
        kind: 'multi_word',
        relevant: ids,
        engaged: [],
      });
  }
  for (const l of learned) add({ query: l.query, kind: 'learned', relevant: l.engaged, engaged: l.engaged });
  return out;
}
