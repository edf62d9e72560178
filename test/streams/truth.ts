// Reads every aggregate the ground truth covers, in the same shape as `Truth`, through a query function
// (the analysts' SQL endpoint of a child process, or a Db).
import type { Truth } from './scenario.ts';

export type QueryFn = (sql: string) => Promise<Record<string, unknown>[]>;

/** query over the read-only analysts' endpoint (ClickHouse HTTP interface) */
export function httpQuery(url: string): QueryFn {
  return async (sql) => {
    const r = await fetch(`${url}/`, { method: 'POST', body: `${sql} FORMAT JSONEachRow` });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`query failed (${r.status}): ${text}\n${sql}`);
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };
}

const toMap = (rows: Record<string, unknown>[], keyCols: string[], valCol: string, asString = false) => {
  const out: Record<string, number | string> = {};
  for (const r of rows)
    out[keyCols.map((c) => String(r[c])).join('|')] = asString ? String(r[valCol]) : Number(r[valCol]);
  return out;
};

/** Decimal text → fixed 6 decimals (so "6.5" and "6.500000" compare equal). */
export function fixed6(v: string): string {
  const [a, b = ''] = v.split('.');
  return `${a}.${(b + '000000').slice(0, 6)}`;
}

export async function readAggregates(q: QueryFn, suffix = ''): Promise<Truth> {
  const t = (name: string) => `${name}${suffix}`;
  const revenue = toMap(
    await q(
      `SELECT store_id, product_id, toString(sum(revenue)) AS v FROM ${t('product_daily_sales')} GROUP BY store_id, product_id HAVING sum(revenue) != 0`,
    ),
    ['store_id', 'product_id'],
    'v',
    true,
  ) as Record<string, string>;
  for (const k of Object.keys(revenue)) revenue[k] = fixed6(revenue[k]);
  // one read of product_daily_engagement for its four measures: store|product → value, zeros left out
  const engagementRows = await q(
    `SELECT store_id, product_id, sum(views) AS views, sum(clicks) AS clicks, sum(add_to_carts) AS add_to_carts, sum(impressions) AS impressions
     FROM ${t('product_daily_engagement')} GROUP BY store_id, product_id`,
  );
  const engagement = (col: string) =>
    toMap(
      engagementRows.filter((r) => Number(r[col]) > 0),
      ['store_id', 'product_id'],
      col,
    ) as Record<string, number>;
  return {
    eventsRaw: toMap(
      await q(`SELECT store_id, count() AS v FROM ${t('events_raw')} GROUP BY store_id`),
      ['store_id'],
      'v',
    ) as Record<string, number>,
    views: engagement('views'),
    clicks: engagement('clicks'),
    addToCarts: engagement('add_to_carts'),
    impressions: engagement('impressions'),
    coView: toMap(
      await q(
        `SELECT store_id, product_a, product_b, sum(sessions) AS v FROM ${t('co_view_pairs')} GROUP BY store_id, product_a, product_b HAVING v != 0`,
      ),
      ['store_id', 'product_a', 'product_b'],
      'v',
    ) as Record<string, number>,
    coCart: toMap(
      await q(
        `SELECT store_id, product_a, product_b, sum(sessions) AS v FROM ${t('co_cart_pairs')} GROUP BY store_id, product_a, product_b HAVING v != 0`,
      ),
      ['store_id', 'product_a', 'product_b'],
      'v',
    ) as Record<string, number>,
    searchedViewed: toMap(
      await q(
        `SELECT store_id, query, product_id, sum(sessions) AS v FROM ${t('searched_then_viewed')} GROUP BY store_id, query, product_id HAVING v != 0`,
      ),
      ['store_id', 'query', 'product_id'],
      'v',
    ) as Record<string, number>,
    searchedCarted: toMap(
      await q(
        `SELECT store_id, query, product_id, sum(sessions) AS v FROM ${t('searched_then_carted')} GROUP BY store_id, query, product_id HAVING v != 0`,
      ),
      ['store_id', 'query', 'product_id'],
      'v',
    ) as Record<string, number>,
    viewedBought: toMap(
      await q(
        `SELECT store_id, viewed_id, bought_id, sum(purchases) AS v FROM ${t('viewed_then_bought')} GROUP BY store_id, viewed_id, bought_id HAVING v != 0`,
      ),
      ['store_id', 'viewed_id', 'bought_id'],
      'v',
    ) as Record<string, number>,
    searchedPurchased: toMap(
      await q(
        `SELECT store_id, query, product_id, sum(purchases) AS v FROM ${t('searched_then_purchased')} GROUP BY store_id, query, product_id HAVING v != 0`,
      ),
      ['store_id', 'query', 'product_id'],
      'v',
    ) as Record<string, number>,
    sessions: toMap(
      await q(
        `SELECT store_id, count() AS v FROM (SELECT store_id, session_id, seq FROM ${t('sessions')} GROUP BY store_id, session_id, seq) GROUP BY store_id`,
      ),
      ['store_id'],
      'v',
    ) as Record<string, number>,
    sessionEvents: toMap(
      await q(`SELECT store_id, sum(events) AS v FROM ${t('sessions')} GROUP BY store_id`),
      ['store_id'],
      'v',
    ) as Record<string, number>,
    trending: toMap(
      await q(
        `SELECT store_id, country, toString(bucket) AS b, query, uniqExactMerge(voters) AS v FROM ${t('trending_queries_hourly')} GROUP BY store_id, country, b, query`,
      ),
      ['store_id', 'country', 'b', 'query'],
      'v',
    ) as Record<string, number>,
    searches: toMap(
      await q(`SELECT store_id, sum(searches) AS v FROM ${t('searches_served_daily')} GROUP BY store_id`),
      ['store_id'],
      'v',
    ) as Record<string, number>,
    units: toMap(
      await q(
        `SELECT store_id, product_id, sum(units) AS v FROM ${t('product_daily_sales')} GROUP BY store_id, product_id HAVING v != 0`,
      ),
      ['store_id', 'product_id'],
      'v',
    ) as Record<string, number>,
    orders: toMap(
      await q(
        `SELECT store_id, product_id, sum(orders) AS v FROM ${t('product_daily_sales')} GROUP BY store_id, product_id HAVING v != 0`,
      ),
      ['store_id', 'product_id'],
      'v',
    ) as Record<string, number>,
    revenue,
    coPurchase: toMap(
      await q(
        `SELECT store_id, product_a, product_b, sum(orders) AS v FROM ${t('co_purchase_pairs')} GROUP BY store_id, product_a, product_b HAVING v != 0`,
      ),
      ['store_id', 'product_a', 'product_b'],
      'v',
    ) as Record<string, number>,
  };
}

/** the truth with its buckets in ClickHouse's text form and revenue fixed to 6 decimals */
export function normalizeTruth(t: Truth): Truth {
  const trending: Record<string, number> = {};
  for (const [k, v] of Object.entries(t.trending)) {
    const [s, c, b, q] = k.split('|');
    trending[[s, c, b.replace('T', ' '), q].join('|')] = v;
  }
  const revenue: Record<string, string> = {};
  for (const [k, v] of Object.entries(t.revenue)) revenue[k] = fixed6(v);
  return { ...t, trending, revenue };
}
