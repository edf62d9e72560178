// Store configuration as events: the payload of every configuration kind carried on the compacted topic
// `stores.config.v1` (TOPICS.storeConfig), and the Avro envelope that carries them.
//
// Record key   `${store_id}|${kind}|${item_id}` (UTF-8 string; store ids and kinds never contain `|`,
//              the item id is everything after the second `|`).
// Record value Avro `StoreConfigEvent` (Confluent framing through the registry): the envelope names the
//              item and its version; `payload_json` is the kind's payload as JSON, validated with the
//              zod schema of that kind on write and again on read. A null value (tombstone) deletes the
//              item; compaction keeps the newest value per key.
//
// Payload fields are snake_case, as on the storefront wire (anchor_type, sort_index, …).
import type { Schema } from 'avsc';
import { z } from 'zod';
import { avroFromZod } from './avro/generate.ts';
import {
  MAX_TIME_MS,
  normalizeQuery,
  numericGidRegex,
  STORE_ID_MESSAGE,
  STORE_ID_RE,
  toNumericId,
  ULID_RE,
} from './fields.ts';

// ---------------------------------------------------------------------------------------------------
// identifiers and shared pieces

/** store ids: a ULID by default; operators may choose a readable slug (e.g. `demo`) */
export const StoreId = z.string().regex(STORE_ID_RE, STORE_ID_MESSAGE);
export const Ulid = z.string().regex(ULID_RE, 'expected a ULID (26 characters, Crockford base32, upper case)');
/** generic item ids: no `|` (key separator), no control characters */
export const ItemId = z
  .string()
  .regex(/^[^|\s\p{Cc}][^|\p{Cc}]{0,254}$/u, 'expected 1-255 characters without "|" or control characters');
const Code = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'expected 1-64 characters of a-z 0-9 _ - (lower case)');
const Handle = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,254}$/, 'expected a collection handle (a-z 0-9 _ -)');
const IsoTime = z.iso.datetime({ offset: true });
const Country = z
  .string()
  .regex(/^[A-Za-z]{2}$/, 'expected an ISO 3166-1 alpha-2 country code')
  .transform((v) => v.toUpperCase());
const Currency = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'expected an ISO 4217 currency code')
  .transform((v) => v.toUpperCase());
const Digits = z.string().regex(/^\d{1,20}$/, 'expected a numeric id');
const Status = z.enum(['published', 'draft']);
const UrlOrPath = z
  .string()
  .max(2048)
  .refine(
    (v) => /^\/(?!\/)/.test(v) || /^https?:\/\/[^\s]+$/i.test(v),
    'expected an absolute http(s) URL or a path starting with /',
  );

/** Normalized text used as an item id for term-keyed kinds (redirects, autocomplete curation): the one
 *  query normalization (schemas/fields.ts), so a term matches the trending key of the same query. */
export const normalizeTerm = normalizeQuery;

/** Option codes are normalized: lower case, spaces to underscores (as defaultSelectedOptions does). */
export function normalizeOptionCode(code: string): string {
  return code.trim().toLowerCase().replace(/\s+/g, '_');
}

/** `gid://<platform>/<Type>/<id>` or a bare numeric id → the numeric id (schemas/fields.ts toNumericId). */
export function gidNumericId(value: string, type: string): string | undefined {
  return toNumericId(value, type);
}

/** a global id of `type` (gid://<platform>/<Type>/<digits>), stored as given */
const gidOf = (type: string) => z.string().regex(numericGidRegex(type), `expected gid://<platform>/${type}/<id>`);
/** a product id as a merchandiser writes it: digits or gid://<platform>/Product/<digits>, stored as given */
const ProductRef = z
  .string()
  .refine((v) => v === v.trim() && toNumericId(v, 'Product') !== undefined, 'expected a product id');

/** A condition over the request (geo, customer, device, UTM, anchor, query): the filter_group shape. */
const ConditionOperator = z.enum([
  'eq',
  'neq',
  'in',
  'notIn',
  'gt',
  'gte',
  'lt',
  'lte',
  'between',
  'notBetween',
  'contains',
  'doesNotContain',
  'beginsWith',
  'endsWith',
  'doesNotBeginWith',
  'doesNotEndWith',
  'null',
  'notNull',
]);
const ConditionLeaf = z.strictObject({
  property: z.string().min(1).max(200),
  operator: ConditionOperator,
  values: z
    .array(z.union([z.string().max(1000), z.number(), z.boolean()]))
    .max(250)
    .default([]),
});
const ConditionGroupInner = z.strictObject({
  conditional: z.enum(['AND', 'OR']).default('AND'),
  expressions: z.array(ConditionLeaf).min(1).max(50),
});
/** Nesting limit: two levels (a group may hold leaves and groups of leaves), as filter_group. */
export const ConditionGroup = z.strictObject({
  conditional: z.enum(['AND', 'OR']).default('AND'),
  expressions: z
    .array(z.union([ConditionLeaf, ConditionGroupInner]))
    .min(1)
    .max(50),
});
export type ConditionGroup = z.infer<typeof ConditionGroup>;

const Schedule = z
  .strictObject({ start_at: IsoTime.nullable().default(null), end_at: IsoTime.nullable().default(null) })
  .refine((s) => !s.start_at || !s.end_at || Date.parse(s.start_at) < Date.parse(s.end_at), {
    message: 'end_at must be after start_at',
    path: ['end_at'],
  });

// ---------------------------------------------------------------------------------------------------
// kinds

export const MediaPreloads = z.strictObject({
  enabled: z.boolean().default(true),
  srcset_sizes: z.array(z.number().int().min(1).max(10000)).min(1).max(20).default([360, 540, 720, 900, 1080]),
  /** host the image URLs are rewritten to; null = the referrer's storefront domain */
  rewrite_domain: z
    .string()
    .regex(
      /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i,
      'expected a host name such as cdn.example.com',
    )
    .nullable()
    .default(null),
  rewrite_urls: z.boolean().default(true),
});

export const StoreConfig = z.strictObject({
  store_id: StoreId,
  name: z.string().trim().min(1).max(200),
  status: z.enum(['active', 'suspended']).default('active'),
  /** code of the primary market (a `market` item) */
  primary_market: Code.nullable().default(null),
  market_mode: z.enum(['strict', 'pricing_only', 'ignore']).default('ignore'),
  autocomplete_mode: z.enum(['per_region', 'global']).default('per_region'),
  media_preloads: MediaPreloads.default(MediaPreloads.parse({})),
  /** brand description used by autocomplete curation, at most 2000 characters */
  brand_prompt: z.string().max(2000).nullable().default(null),
  /** search: a redirect to a plain collection page is served inline (browse of it) instead of a redirect */
  inline_collection_redirects: z.boolean().default(false),
  created_at: IsoTime,
  suspended_at: IsoTime.nullable().default(null),
});

export const AccessTokenConfig = z.strictObject({
  token_id: Ulid,
  /** SHA-256 of the token, hex; the token itself is never stored */
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lower-case hex characters'),
  label: z.string().max(200).nullable().default(null),
  created_at: IsoTime,
  revoked_at: IsoTime.nullable().default(null),
});

export const MarketConfig = z
  .strictObject({
    code: Code,
    name: z.string().max(200).nullable().default(null),
    /** numeric platform market id, and its global id `gid://<platform>/Market/<id>` */
    market_id: Digits.nullable().default(null),
    gid: gidOf('Market').nullable().default(null),
    countries: z.array(Country).min(1).max(250),
    currency: Currency,
    price_list_id: z.string().min(1).max(200).nullable().default(null),
  })
  .transform((m) => ({ ...m, gid: m.gid ?? (m.market_id ? `gid://shopify/Market/${m.market_id}` : null) }))
  .refine((m) => !m.gid || !m.market_id || m.gid.endsWith(`/${m.market_id}`), {
    message: 'gid and market_id name different markets',
    path: ['gid'],
  });

export const SortExpression = z.strictObject({
  /** product attribute or signal, e.g. `published_at`, `price`, `revenue_7d`, `popularity`, `available` */
  attribute: z.string().regex(/^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/, 'expected an attribute code'),
  direction: z.enum(['asc', 'desc']),
  /** relative weight inside a weighted group (expressions with a weight are combined) */
  weight: z.number().min(0).max(100).optional(),
  /** soft boost applied instead of a hard sort key */
  boost: z
    .strictObject({ mode: z.enum(['multiplicative', 'additive']), factor: z.number().min(-100).max(100) })
    .optional(),
});
export const SortOrderConfig = z
  .strictObject({
    code: Code.refine((c) => c !== 'relevance', '`relevance` is built in and cannot be configured'),
    nickname: z.string().trim().min(1).max(100),
    scope: z.enum(['search', 'collection', 'both']).default('both'),
    expressions: z.array(SortExpression).min(1).max(20),
    /** search only: results scoring below this fraction are soft-demoted (default 0.5) */
    soft_demotion_threshold: z.number().min(0).max(1).default(0.5),
    /**
     * the collections (handles) whose default sort this is: browse without `sort_order_code` uses it before
     * the collection's `service.default_sort_order` metafield. Kept on the sort order, so the default
     * always names an existing sort order of the collection scope; when several name one collection, the
     * lowest code wins.
     */
    default_for_collections: z.array(Handle).max(250).default([]),
  })
  .refine((s) => s.scope !== 'search' || s.default_for_collections.length === 0, {
    message: 'a sort order of the search scope cannot be the default of a collection',
    path: ['default_for_collections'],
  });

export const ANCHOR_TYPES = [
  'product',
  'article',
  'collection',
  'cart',
  'home',
  'search',
  'not_found',
  'landing',
  'other',
  'none',
] as const;
export const STRATEGY_TYPES = [
  'interaction',
  'similarity',
  'manual',
  'popularity',
  'personal',
  'rule',
  'content',
] as const;
/** strategy key → its strategy type (the blocks service resolves the key; the type is for display and filtering) */
export const STRATEGY_KEYS = {
  frequently_bought_together: 'interaction',
  customers_also_viewed: 'interaction',
  customers_also_added_to_cart: 'interaction',
  customers_who_bought_also_bought: 'interaction',
  viewed_then_bought: 'interaction',
  browsed_then_bought: 'interaction',
  searched_then_viewed: 'interaction',
  searched_then_purchased: 'interaction',
  similar_products: 'similarity',
  photographed_together: 'similarity',
  manual_curation: 'manual',
  metafield_references: 'manual',
  best_sellers: 'popularity',
  trending_in_collection: 'popularity',
  trending_now: 'popularity',
  new_arrivals: 'popularity',
  recently_viewed: 'personal',
  free_shipping_picks: 'rule',
  related_content: 'content',
} as const satisfies Record<string, (typeof STRATEGY_TYPES)[number]>;
export type StrategyKey = keyof typeof STRATEGY_KEYS;

export const Safeguards = z
  .strictObject({
    min_products: z.number().int().min(0).max(100).default(1),
    max_products: z.number().int().min(1).max(100).default(24),
    hide_out_of_stock: z.boolean().default(true),
    /** 0 = no personalization, 1 = fully personalized ordering */
    personalization_strength: z.number().min(0).max(1).default(0.5),
  })
  .refine((s) => s.min_products <= s.max_products, {
    message: 'min_products must not exceed max_products',
    path: ['min_products'],
  });

const BlockAction = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('apply_filter'), filter_group: ConditionGroup }),
  z.strictObject({ type: z.literal('hide_block') }),
  z.strictObject({
    type: z.literal('change_strategy'),
    strategy_key: z.enum(Object.keys(STRATEGY_KEYS) as [StrategyKey, ...StrategyKey[]]),
  }),
  z.strictObject({
    type: z.literal('override_safeguards'),
    safeguards: z.strictObject({
      min_products: z.number().int().min(0).max(100).optional(),
      max_products: z.number().int().min(1).max(100).optional(),
      hide_out_of_stock: z.boolean().optional(),
      personalization_strength: z.number().min(0).max(1).optional(),
    }),
  }),
]);
export const BlockRule = z.strictObject({
  name: z.string().max(200).nullable().default(null),
  /** over anchor attributes (`anchor.vendor`), `geo.country`, `customer.tags`, `device_type`, `utm.source`, … */
  conditions: ConditionGroup,
  actions: z.array(BlockAction).min(1).max(10),
});

export const BlockConfig = z
  .strictObject({
    id: Ulid,
    title: z.string().trim().min(1).max(200),
    anchor_type: z.enum(ANCHOR_TYPES),
    strategy_type: z.enum(STRATEGY_TYPES).optional(),
    strategy_key: z.enum(Object.keys(STRATEGY_KEYS) as [StrategyKey, ...StrategyKey[]]),
    /** strategy parameters: manual product ids, metafield reference, look-back window */
    strategy_params: z
      .strictObject({
        product_ids: z.array(ProductRef).max(250).optional(),
        metafield: z
          .string()
          .regex(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'expected namespace.key')
          .optional(),
        lookback_days: z.number().int().min(1).max(365).optional(),
      })
      .default({}),
    /** ordered; the first rule whose conditions match applies */
    rules: z.array(BlockRule).max(50).default([]),
    safeguards: Safeguards.default(Safeguards.parse({})),
    fallback: z
      .array(z.strictObject({ block_id: Ulid, mode: z.enum(['replace', 'fill']).default('replace') }))
      .max(10)
      .default([]),
    /** lower first */
    priority: z.number().int().min(0).max(1_000_000).default(100),
    status: Status.default('published'),
  })
  .transform((b) => ({ ...b, strategy_type: b.strategy_type ?? STRATEGY_KEYS[b.strategy_key] }))
  .superRefine((b, ctx) => {
    if (b.strategy_type !== STRATEGY_KEYS[b.strategy_key]) {
      ctx.addIssue({
        code: 'custom',
        path: ['strategy_type'],
        message: `strategy ${b.strategy_key} is of type ${STRATEGY_KEYS[b.strategy_key]}`,
      });
    }
    if (b.strategy_key === 'manual_curation' && !b.strategy_params.product_ids?.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['strategy_params', 'product_ids'],
        message: 'manual_curation needs at least one product id',
      });
    }
    if (b.strategy_key === 'metafield_references' && !b.strategy_params.metafield) {
      ctx.addIssue({
        code: 'custom',
        path: ['strategy_params', 'metafield'],
        message: 'metafield_references needs a metafield',
      });
    }
    b.fallback.forEach((f, i) => {
      if (f.block_id === b.id)
        ctx.addIssue({
          code: 'custom',
          path: ['fallback', i, 'block_id'],
          message: 'a block cannot fall back to itself',
        });
    });
  });

const BannerMedia = z.strictObject({ src: z.url().max(2048), alt: z.string().max(500).default('') });
const BannerLayout = z.strictObject({
  placement: z.enum(['hero', 'inline']),
  width: z.number().int().min(1).max(2).default(1),
  height: z.number().int().min(1).max(2).default(1),
  /** row-major cell index, or null (hero) */
  position: z.number().int().min(0).max(10_000).nullable().default(null),
});
export const Banner = z
  .strictObject({
    id: Ulid,
    name: z.string().trim().min(1).max(200),
    banner_type: z
      .string()
      .regex(/^[a-z0-9_-]{1,64}$/)
      .default('link'),
    mode: z.enum(['overtake', 'inject']),
    /** inject mode only */
    link: UrlOrPath.nullable().default(null),
    /** lowest wins on the same cell */
    sort_index: z.number().int().min(0).max(10_000).default(0),
    web_media: BannerMedia.nullable().default(null),
    mobile_media: BannerMedia.nullable().default(null),
    web_layout: BannerLayout,
    mobile_layout: BannerLayout,
    schedule_start_at: IsoTime.nullable().default(null),
    schedule_end_at: IsoTime.nullable().default(null),
    conditions: ConditionGroup.nullable().default(null),
  })
  .superRefine((b, ctx) => {
    if (b.mode === 'overtake' && b.link !== null)
      ctx.addIssue({ code: 'custom', path: ['link'], message: 'link is for inject banners only' });
    if (b.schedule_start_at && b.schedule_end_at && Date.parse(b.schedule_start_at) >= Date.parse(b.schedule_end_at)) {
      ctx.addIssue({
        code: 'custom',
        path: ['schedule_end_at'],
        message: 'schedule_end_at must be after schedule_start_at',
      });
    }
  });

const MerchRuleBody = {
  name: z.string().trim().min(1).max(200),
  collection_handle: Handle,
  /** the sort order the rule applies to; null = the collection's default sort */
  sort_order_code: Code.nullable().default(null),
  pins: z
    .array(
      z.strictObject({
        product_id: ProductRef,
        /** 1-based */
        position: z.number().int().min(1).max(1000),
        conditions: ConditionGroup.nullable().default(null),
      }),
    )
    .max(250)
    .default([]),
  boosts: z
    .array(
      z.strictObject({
        /** products matching these conditions are boosted (factor > 1) or buried (factor < 1) */
        match: ConditionGroup,
        mode: z.enum(['multiplicative', 'additive']).default('multiplicative'),
        factor: z.number().min(-100).max(100),
      }),
    )
    .max(50)
    .default([]),
  banners: z.array(Banner).max(5, 'at most 5 banners per rule').default([]),
  disable_variant_breakouts: z.boolean().default(false),
  group_related_sequentially: z.boolean().default(false),
  schedule: Schedule.nullable().default(null),
  /** over geo, customer tags/status, UTM, device */
  conditions: ConditionGroup.nullable().default(null),
  priority: z.number().int().min(0).max(1_000_000).default(100),
  status: Status.default('published'),
};
export const MerchRuleConfig = z.strictObject({ id: Ulid, ...MerchRuleBody });

export const PREVIEW_TTL_MS = 60 * 60 * 1000;
export const MerchPreviewConfig = z.strictObject({
  id: z.uuid(),
  /** the rule to preview; `id` is the rule it would replace, when any */
  rule: z.strictObject({ id: Ulid.nullable().default(null), ...MerchRuleBody }),
  created_at: IsoTime,
  /** created_at + 1 h, set by the writer */
  expires_at: IsoTime,
});

/** search-rule actions: the known types are validated; unknown types are kept and reported at run time as `unsupported_action_type` */
const KNOWN_SEARCH_ACTIONS = {
  replace_query: z.strictObject({ type: z.literal('replace_query'), query: z.string().trim().min(1).max(255) }),
  expand_query: z.strictObject({
    type: z.literal('expand_query'),
    queries: z.array(z.string().trim().min(1).max(255)).min(1).max(20),
  }),
  apply_filter: z.strictObject({ type: z.literal('apply_filter'), filter_group: ConditionGroup }),
  pin_products: z.strictObject({
    type: z.literal('pin_products'),
    product_ids: z.array(ProductRef).min(1).max(50),
  }),
  boost: z.strictObject({ type: z.literal('boost'), match: ConditionGroup, factor: z.number().min(0).max(100) }),
  bury: z.strictObject({ type: z.literal('bury'), match: ConditionGroup, factor: z.number().min(0).max(1) }),
  set_sort_order: z.strictObject({ type: z.literal('set_sort_order'), sort_order_code: Code }),
  redirect: z.strictObject({ type: z.literal('redirect'), url: UrlOrPath }),
} as const;
export const SearchRuleAction = z
  .looseObject({ type: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'expected an action type') })
  .superRefine((a, ctx) => {
    const known = (KNOWN_SEARCH_ACTIONS as Record<string, z.ZodType>)[a.type];
    if (!known) return;
    const r = known.safeParse(a);
    if (!r.success)
      for (const issue of r.error.issues)
        ctx.addIssue({ ...issue, code: 'custom', message: issue.message, path: issue.path });
  });
export const SearchRuleConfig = z.strictObject({
  id: Ulid,
  name: z.string().trim().min(1).max(200),
  targeting: z.strictObject({
    /** which queries: `any` (every query), or exact / contains / starts_with over normalized query text */
    query_match: z.enum(['any', 'exact', 'contains', 'starts_with']).default('any'),
    queries: z.array(z.string().trim().min(1).max(255)).max(250).default([]),
    conditions: ConditionGroup.nullable().default(null),
  }),
  actions: z.array(SearchRuleAction).min(1).max(20),
  priority: z.number().int().min(0).max(1_000_000).default(100),
  status: Status.default('published'),
});

export const RedirectTermConfig = z.strictObject({
  term: z.string().trim().min(1).max(255).transform(normalizeTerm),
  url: UrlOrPath,
  /** exact: normalized query equals the term; semantic: embedding similarity above the threshold */
  match: z.enum(['exact', 'semantic']).default('exact'),
});

export const SynonymConfig = z.discriminatedUnion('type', [
  z.strictObject({
    id: ItemId,
    type: z.literal('two_way'),
    terms: z.array(z.string().trim().min(1).max(255).transform(normalizeTerm)).min(2).max(50),
  }),
  z.strictObject({
    id: ItemId,
    type: z.literal('one_way'),
    /** a query for `term` also matches `synonyms`, not the other way round */
    term: z.string().trim().min(1).max(255).transform(normalizeTerm),
    synonyms: z.array(z.string().trim().min(1).max(255).transform(normalizeTerm)).min(1).max(50),
  }),
]);

export const VariantBreakoutConfig = z.strictObject({
  id: ItemId,
  name: z.string().trim().min(1).max(200),
  option_code: z.string().trim().min(1).max(100).transform(normalizeOptionCode),
  applies: z.enum(['both', 'collections', 'search']).default('both'),
  include_option_value_in_title: z.boolean().default(true),
  /** optional targeting (AND): only these collections / products break out */
  collection_handles: z.array(Handle).max(250).default([]),
  product_ids: z.array(Digits).max(250).default([]),
  status: Status.default('published'),
});

export const AutocompleteCurationConfig = z.strictObject({
  /** canonical query or query-cluster label, normalized */
  query: z.string().trim().min(1).max(255).transform(normalizeTerm),
  allowed: z.boolean(),
  display_label: z.string().trim().min(1).max(255).nullable().default(null),
});

const LocationGid = gidOf('CompanyLocation');
/** a numeric platform id, also accepted as its global id `gid://<platform>/<type>/<id>` (stored as digits) */
const PlatformId = (type: string) =>
  z
    .string()
    .refine((v) => gidNumericId(v.trim(), type) !== undefined, `expected a numeric id or gid://<platform>/${type}/<id>`)
    .transform((v) => gidNumericId(v.trim(), type) as string);

export const B2bCompanyLocationConfig = z.strictObject({
  gid: LocationGid,
  company_id: PlatformId('Company'),
  catalog_id: z.string().min(1).max(200),
  price_list_id: z.string().min(1).max(200).nullable().default(null),
});

export const B2bCustomerConfig = z.strictObject({
  customer_id: PlatformId('Customer'),
  company_ids: z.array(PlatformId('Company')).min(1).max(1000),
});

export const RankingRuleConfig = z
  .strictObject({
    id: Ulid,
    name: z.string().trim().min(1).max(200),
    /** normalized queries the rule targets; empty = every text search */
    queries: z.array(z.string().trim().min(1).max(255).transform(normalizeTerm)).max(250).default([]),
    /** pin: put product_ids first, in order; promote / demote: products matching `match`, scaled by magnitude */
    type: z.enum(['pin', 'promote', 'demote']),
    product_ids: z.array(Digits).max(50).default([]),
    match: ConditionGroup.nullable().default(null),
    /** 0-1 */
    magnitude: z.number().min(0).max(1).default(0.5),
    status: Status.default('draft'),
  })
  .superRefine((r, ctx) => {
    if (r.type === 'pin' && r.product_ids.length === 0)
      ctx.addIssue({ code: 'custom', path: ['product_ids'], message: 'a pin rule needs product_ids' });
    if (r.type !== 'pin' && !r.match)
      ctx.addIssue({ code: 'custom', path: ['match'], message: `a ${r.type} rule needs match conditions` });
  });

/** HMAC secret the catalog webhooks of this store are signed with (several during a rotation). Stored as
 *  given, since verifying an HMAC needs it; never exported, never listed by the CLI. */
export const WebhookSecretConfig = z.strictObject({
  id: ItemId,
  secret: z.string().min(16, 'at least 16 characters').max(512),
  label: z.string().max(200).nullable().default(null),
  created_at: IsoTime.nullable().default(null),
});

// ---------------------------------------------------------------------------------------------------
// the registry of kinds

export const CONFIG_SCHEMAS = {
  store: StoreConfig,
  access_token: AccessTokenConfig,
  market: MarketConfig,
  sort_order: SortOrderConfig,
  block: BlockConfig,
  merch_rule: MerchRuleConfig,
  merch_preview: MerchPreviewConfig,
  search_rule: SearchRuleConfig,
  redirect_term: RedirectTermConfig,
  synonym: SynonymConfig,
  variant_breakout: VariantBreakoutConfig,
  autocomplete_curation: AutocompleteCurationConfig,
  b2b_company_location: B2bCompanyLocationConfig,
  b2b_customer: B2bCustomerConfig,
  ranking_rule: RankingRuleConfig,
  webhook_secret: WebhookSecretConfig,
} as const;

export type ConfigKind = keyof typeof CONFIG_SCHEMAS;
export const CONFIG_KINDS = Object.keys(CONFIG_SCHEMAS) as ConfigKind[];
/** the validated (output) payload of a kind */
export type ConfigPayload<K extends ConfigKind> = z.output<(typeof CONFIG_SCHEMAS)[K]>;
/** what a writer may pass (defaults not yet applied) */
export type ConfigInput<K extends ConfigKind> = z.input<(typeof CONFIG_SCHEMAS)[K]>;

export function isConfigKind(kind: string): kind is ConfigKind {
  return Object.hasOwn(CONFIG_SCHEMAS, kind);
}

/** The item id of a validated payload: the key under which it is stored. */
export function itemIdOf<K extends ConfigKind>(kind: K, payload: ConfigPayload<K>): string {
  const p = payload as Record<string, unknown>;
  switch (kind) {
    case 'store':
      return String(p.store_id);
    case 'access_token':
      return String(p.token_id);
    case 'market':
    case 'sort_order':
      return String(p.code);
    case 'redirect_term':
      return String(p.term);
    case 'autocomplete_curation':
      return String(p.query);
    case 'b2b_company_location':
      return gidNumericId(String(p.gid), 'CompanyLocation') as string;
    case 'b2b_customer':
      return String(p.customer_id);
    default:
      return String(p.id);
  }
}

// ---------------------------------------------------------------------------------------------------
// the Kafka record

export const KEY_SEPARATOR = '|';

export function configKey(storeId: string, kind: ConfigKind, itemId: string): string {
  return `${storeId}${KEY_SEPARATOR}${kind}${KEY_SEPARATOR}${itemId}`;
}

export function parseConfigKey(key: string): { storeId: string; kind: string; itemId: string } | undefined {
  const a = key.indexOf(KEY_SEPARATOR);
  const b = a < 0 ? -1 : key.indexOf(KEY_SEPARATOR, a + 1);
  if (a <= 0 || b < 0 || b === key.length - 1) return undefined;
  return { storeId: key.slice(0, a), kind: key.slice(a + 1, b), itemId: key.slice(b + 1) };
}

/** The decoded record value (the Avro envelope). */
export const StoreConfigEnvelope = z.strictObject({
  store_id: StoreId,
  kind: z.string().min(1).describe('store, access_token, market, sort_order, block, … (schemas/config.ts)'),
  item_id: z.string().min(1),
  /** ULID of this write (monotonic per writer) */
  version: Ulid.describe('ULID of the write'),
  /** epoch milliseconds (Avro timestamp-millis) */
  written_at: z.int().min(0).max(MAX_TIME_MS).meta({ avroLogicalType: 'timestamp-millis' }),
  payload_json: z.string().describe('the payload of the kind, JSON, validated by schemas/config.ts'),
});
export type StoreConfigEnvelope = z.infer<typeof StoreConfigEnvelope>;

/** Avro schema of the record value of `stores.config.v1` (subject `stores.config.v1-value`), generated
 *  from `StoreConfigEnvelope`; the same layout as the hand-written schema it replaced (schemas/avro/
 *  store-config.avsc, test/schemas/avro.test.ts). */
export const STORE_CONFIG_AVRO: Schema = avroFromZod(StoreConfigEnvelope, {
  name: 'StoreConfigEvent',
  namespace: 'discovery.stores.config.v1',
  doc: 'One configuration item of a store; the key is store_id|kind|item_id; a null value deletes the item',
});

/** Validate a payload of a kind; returns issues with dotted field paths instead of throwing. */
export function validateConfig<K extends ConfigKind>(
  kind: K,
  input: unknown,
): { ok: true; value: ConfigPayload<K> } | { ok: false; issues: { path: string; message: string }[] } {
  const r = (CONFIG_SCHEMAS[kind] as z.ZodType).safeParse(input);
  if (r.success) return { ok: true, value: r.data as ConfigPayload<K> };
  return {
    ok: false,
    issues: r.error.issues.flatMap((i) =>
      // name each unknown field in the path (a typo in a field name is the usual cause)
      i.code === 'unrecognized_keys'
        ? i.keys.map((k) => ({ path: formatPath([...i.path, k]), message: 'unknown field' }))
        : [{ path: formatPath(i.path), message: i.message }],
    ),
  };
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out || '(root)';
}
