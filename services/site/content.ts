// The public site's content: the articles under /articles/{slug} (gated ones show their lead until the
// reader unlocks them with POST /api/article-unlock) and the integration catalog the integration forms
// refer to. Static, shipped with the code: the site describes the platform, not a store.
import type { INTEGRATION_CATEGORIES } from '../../schemas/site.ts';

export interface Article {
  slug: string;
  title: string;
  summary: string;
  published: string;
  /** a gated article shows `lead` only until unlocked */
  gated: boolean;
  /** paragraphs shown to everyone */
  lead: string[];
  /** paragraphs behind the gate (shown at once when not gated) */
  body: string[];
}

export const ARTICLES: readonly Article[] = [
  {
    slug: 'event-sourced-discovery',
    title: 'Event-sourced discovery: the log is the source of truth',
    summary: 'Why every aggregate behind search, autocomplete and recommendations is rebuilt from a Kafka log.',
    published: '2026-10-02',
    gated: false,
    lead: [
      'Every signal the discovery API ranks with — trending queries, co-views, co-purchases, searched-then-viewed pairs — is derived from one append-only log of storefront events and request events.',
    ],
    body: [
      'Stream processors turn the log into ClickHouse aggregates with exactly-once sinks: each insert carries a deduplication token derived from its offsets, and offsets are committed only after the insert returned.',
      'Because the log is kept, an aggregate can be replayed into a shadow table, compared with the live one and swapped in atomically. A bug fix in a processor is a replay, not a migration script.',
    ],
  },
  {
    slug: 'autocomplete-from-trending-searches',
    title: 'Autocomplete from what shoppers actually searched',
    summary: 'Suggestions ranked by distinct voters per hour, decayed over time, per market.',
    published: '2026-10-16',
    gated: false,
    lead: [
      'Autocomplete suggests query text, never products: the suggestions come from the searches the store’s own shoppers ran, one vote per shopper per hour.',
    ],
    body: [
      'The read API keeps an in-process prefix index fed by the trending aggregate and refreshed from the stream within a second, so a new trend shows up without a deploy.',
    ],
  },
  {
    slug: 'relevance-learned-from-the-stream',
    title: 'Relevance learned from the stream',
    summary: 'How click, cart and purchase evidence after a search re-ranks the next search.',
    published: '2026-11-03',
    gated: true,
    lead: [
      'Text matching finds candidates; what shoppers did after the same query decides their order. This article walks through the evidence the engine keeps and how it decays.',
    ],
    body: [
      'Searched-then-viewed, searched-then-carted and searched-then-purchased pairs are kept per store and normalized query. Each pair carries a count of distinct sessions, so one enthusiastic shopper cannot push a product to the top.',
      'The learned stage multiplies the textual score with a bounded boost; a query with no evidence falls back to text and popularity alone. Feedback on a search is recorded with the search context for later tuning.',
    ],
  },
  {
    slug: 'exactly-once-into-clickhouse',
    title: 'Exactly once into ClickHouse, measured under SIGKILL',
    summary: 'Insert deduplication tokens, commit ordering and what a kill test finds.',
    published: '2026-11-17',
    gated: true,
    lead: [
      'A processor is killed with SIGKILL six times while it writes; afterwards every aggregate is compared with the generated ground truth. This is how the sink stays exact.',
    ],
    body: [
      'The insert of a batch carries insert_deduplication_token = (topic, partition, first offset, last offset). A crash between insert and commit re-reads the same batch with the same boundaries, and ClickHouse drops the repeated block in the table and in its materialized views.',
      'Batch boundaries are deterministic per partition, so the retried batch is the same block. The one engine-level gap — a kill inside the insert itself — is detected at start and repaired by a replay.',
    ],
  },
];

export function articleBySlug(slug: string): Article | undefined {
  return ARTICLES.find((a) => a.slug === slug);
}

export interface Integration {
  slug: string;
  name: string;
  category: (typeof INTEGRATION_CATEGORIES)[number];
  description: string;
}

export const INTEGRATIONS: readonly Integration[] = [
  {
    slug: 'shopify',
    name: 'Shopify',
    category: 'Commerce platform',
    description: 'Catalog webhooks and bulk import.',
  },
  {
    slug: 'klaviyo',
    name: 'Klaviyo',
    category: 'Email and SMS',
    description: 'Trending products in campaigns.',
  },
  { slug: 'yotpo', name: 'Yotpo', category: 'Reviews', description: 'Review counts as a ranking signal.' },
  {
    slug: 'google-analytics',
    name: 'Google Analytics',
    category: 'Analytics',
    description: 'Search funnel events.',
  },
];

/** the page paths the sitemap lists (articles included) */
export function indexablePaths(): string[] {
  return ['/', '/integrations', '/docs', ...ARTICLES.map((a) => `/articles/${a.slug}`)];
}

/** plain-text search over the public content (the MCP server's `search_site` tool) */
export function searchContent(query: string, limit = 10): { title: string; path: string; summary: string }[] {
  const terms = query
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t.length > 1);
  if (terms.length === 0) return [];
  const docs = [
    ...ARTICLES.map((a) => ({
      title: a.title,
      path: `/articles/${a.slug}`,
      summary: a.summary,
      // gated bodies are not searchable: the MCP server is public
      text: [a.title, a.summary, ...a.lead, ...(a.gated ? [] : a.body)].join(' ').toLowerCase(),
    })),
    ...INTEGRATIONS.map((i) => ({
      title: `${i.name} integration`,
      path: '/integrations',
      summary: i.description,
      text: `${i.name} ${i.category} ${i.description}`.toLowerCase(),
    })),
  ];
  return docs
    .map((d) => ({ d, score: terms.reduce((s, t) => s + (d.text.includes(t) ? 1 : 0), 0) }))
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, limit)
    .map(({ d }) => ({ title: d.title, path: d.path, summary: d.summary }));
}
