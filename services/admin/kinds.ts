// The configuration item kinds the CLI manages with put / list / get / delete (commands/items.ts): for
// each, its command name, how flags map to the item's fields, and its one-line summary. Flag bounds and
// choices come from the kind's zod schema in schemas/config.ts (flags.ts), so the schema is their one
// definition.
import { type Command, InvalidArgumentError, Option } from 'commander';
import { newUlid } from '../common/ids.ts';
import {
  CONFIG_SCHEMAS,
  type ConfigKind,
  type ConfigPayload,
  gidNumericId,
  normalizeTerm,
} from '../../schemas/config.ts';
import { toNumericId, ULID_RE } from '../../schemas/fields.ts';
import { bool, bounds, choices, intOf, jsonArg, list, numberOf, repeat } from './flags.ts';
import { defined, UsageError } from './io.ts';

export interface KindSpec {
  command: string;
  kind: Exclude<ConfigKind, 'store' | 'access_token'>;
  noun: string;
  /** name of the item id as users know it */
  idName: string;
  description: string;
  /** generated id when `put` gets none (ULID kinds) */
  newId?: () => Record<string, unknown>;
  /** the id field of the item (for patching an existing item) */
  idField?: string;
  normalizeId?: (id: string) => string;
  flags(cmd: Command): void;

  fromFlags(o: Record<string, any>): Record<string, unknown>;

  summary(item: any): string;
  examples: string[];
}

const PRODUCT_ID = (v: string) => {
  if (toNumericId(v, 'Product') === undefined) throw new InvalidArgumentError('expected a product id or gid');
  return v;
};

const { block: BLOCK, sort_order: SORT_ORDER, merch_rule: MERCH_RULE, search_rule: SEARCH_RULE } = CONFIG_SCHEMAS;
const { redirect_term: REDIRECT, variant_breakout: BREAKOUT, ranking_rule: RANKING_RULE } = CONFIG_SCHEMAS;
/** "0-1" for the help of a bounded number */
const range = (b: { min: number; max: number }) => `${b.min}-${b.max}`;
const FALLBACK_MODES = choices(BLOCK, 'fallback[].mode');
const DIRECTIONS = choices(SORT_ORDER, 'expressions[].direction');
const ULID_PATTERN = ULID_RE.source.replace(/^\^|\$$/g, '');
/** --fallback <block ULID>[:mode] */
const FALLBACK = new RegExp(`^(${ULID_PATTERN})(?::(${FALLBACK_MODES.join('|')}))?$`);
/** --expr <attribute>:<direction>[:<weight>] */
const EXPR = new RegExp(`^([A-Za-z_][A-Za-z0-9_.:-]*?):(${DIRECTIONS.join('|')})(?::(\\d+(?:\\.\\d+)?))?$`);

export const KINDS: KindSpec[] = [
  {
    command: 'markets',
    kind: 'market',
    noun: 'market',
    idName: 'market code',
    idField: 'code',
    description: 'markets: countries, currency and price list (context.market resolution)',
    flags: (c) =>
      c
        .option('--code <code>', 'market code (a-z 0-9 _ -), e.g. us')
        .option('--name <name>', 'display name')
        .option('--market-id <id>', 'numeric platform market id (its gid is derived)')
        .option('--gid <gid>', 'gid://<platform>/Market/<id>')
        .option('--countries <list>', 'comma-separated ISO country codes', list)
        .option('--currency <code>', 'ISO 4217 currency')
        .option('--price-list <id>', 'price list reference'),
    fromFlags: (o) => ({
      code: o.code,
      name: o.name,
      market_id: o.marketId,
      gid: o.gid,
      countries: o.countries,
      currency: o.currency,
      price_list_id: o.priceList,
    }),
    summary: (m: ConfigPayload<'market'>) =>
      `${m.code}\t${m.currency}\t${m.countries.join(',')}\t${m.gid ?? ''}\t${m.name ?? ''}`,
    examples: [
      'markets put <store> --code us --countries US --currency USD --market-id 1001',
      'markets list <store>',
      'markets delete <store> us',
    ],
  },
  {
    command: 'sort-orders',
    kind: 'sort_order',
    noun: 'sort order',
    idName: 'sort order code',
    idField: 'code',
    description: 'sort orders: ordered expressions over product attributes (relevance is built in)',
    flags: (c) =>
      c
        .option('--code <code>', 'sort order code, e.g. newest')
        .option('--nickname <name>', 'display name')
        .addOption(new Option('--scope <scope>', 'where it is offered').choices(choices(SORT_ORDER, 'scope')))
        .option(
          '--expr <attribute:direction[:weight]>',
          'an expression, repeatable, in order (e.g. published_at:desc)',
          (v: string, prev: unknown[] | undefined) => {
            const m = EXPR.exec(v);
            if (!m) throw new InvalidArgumentError(`expected attribute:${DIRECTIONS.join('|')}[:weight]`);
            return [
              ...(prev ?? []),
              defined({ attribute: m[1], direction: m[2], weight: m[3] === undefined ? undefined : Number(m[3]) }),
            ];
          },
        )
        .option(
          '--soft-demotion-threshold <x>',
          `${range(bounds(SORT_ORDER, 'soft_demotion_threshold'))} (search only)`,
          numberOf(SORT_ORDER, 'soft_demotion_threshold'),
        )
        .option('--default-for <handle>', 'a collection whose default sort this is, repeatable', repeat),
    fromFlags: (o) => ({
      code: o.code,
      nickname: o.nickname,
      scope: o.scope,
      expressions: o.expr,
      soft_demotion_threshold: o.softDemotionThreshold,
      default_for_collections: o.defaultFor,
    }),
    summary: (s: ConfigPayload<'sort_order'>) =>
      `${s.code}\t${s.nickname}\t${s.scope}\t${s.expressions.map((e) => `${e.attribute}:${e.direction}`).join(' ')}`,
    examples: [
      'sort-orders put <store> --code newest --nickname Newest --expr published_at:desc',
      'sort-orders put <store> --code price_asc --nickname "Price: low to high" --scope collection --expr price:asc',
      'sort-orders put <store> --code newest --default-for new-arrivals',
      'sort-orders delete <store> newest',
    ],
  },
  {
    command: 'blocks',
    kind: 'block',
    noun: 'block',
    idName: 'block id (ULID)',
    idField: 'id',
    newId: () => ({ id: newUlid() }),
    description: 'recommendation blocks: anchor, strategy, rules, safeguards, fallback chain',
    flags: (c) =>
      c
        .option('--id <ulid>', 'block id (default: a new ULID)')
        .option('--title <title>', 'title')
        .addOption(new Option('--anchor <type>', 'anchor type').choices(choices(BLOCK, 'anchor_type')))
        .addOption(new Option('--strategy <key>', 'strategy key').choices(choices(BLOCK, 'strategy_key')))
        .addOption(
          new Option('--strategy-type <type>', 'strategy type (derived from the key when omitted)').choices(
            choices(BLOCK, 'strategy_type'),
          ),
        )
        .option('--product-ids <list>', 'manual_curation: comma-separated product ids', list)
        .option('--metafield <namespace.key>', 'metafield_references: the metafield')
        .option(
          '--min-products <n>',
          'safeguard: minimum products (else the fallback runs)',
          intOf(BLOCK, 'safeguards.min_products'),
        )
        .option('--max-products <n>', 'safeguard: maximum products', intOf(BLOCK, 'safeguards.max_products'))
        .option('--hide-out-of-stock <bool>', 'safeguard: hide out-of-stock products', bool)
        .option(
          '--personalization <x>',
          `safeguard: personalization strength ${range(bounds(BLOCK, 'safeguards.personalization_strength'))}`,
          numberOf(BLOCK, 'safeguards.personalization_strength'),
        )
        .option(
          `--fallback <id[:${FALLBACK_MODES.join('|')}]>`,
          'fallback block, repeatable, in order',
          (v: string, prev: unknown[] | undefined) => {
            const m = FALLBACK.exec(v);
            if (!m) throw new InvalidArgumentError(`expected <block ULID>[:${FALLBACK_MODES.join('|')}]`);
            // without a mode, the schema's default applies
            return [...(prev ?? []), defined({ block_id: m[1], mode: m[2] })];
          },
        )
        .option('--priority <n>', 'lower first', intOf(BLOCK, 'priority'))
        .addOption(new Option('--status <status>', 'published blocks are served').choices(choices(BLOCK, 'status'))),
    fromFlags: (o) => {
      const safeguards = defined({
        min_products: o.minProducts,
        max_products: o.maxProducts,
        hide_out_of_stock: o.hideOutOfStock,
        personalization_strength: o.personalization,
      });
      const params = defined({ product_ids: o.productIds, metafield: o.metafield });
      return {
        id: o.id,
        title: o.title,
        anchor_type: o.anchor,
        strategy_key: o.strategy,
        strategy_type: o.strategyType,
        strategy_params: Object.keys(params).length ? params : undefined,
        safeguards: Object.keys(safeguards).length ? safeguards : undefined,
        fallback: o.fallback,
        priority: o.priority,
        status: o.status,
      };
    },
    summary: (b: ConfigPayload<'block'>) => `${b.id}\t${b.status}\t${b.anchor_type}\t${b.strategy_key}\t${b.title}`,
    examples: [
      'blocks put <store> --title "Bought together" --anchor product --strategy frequently_bought_together --fallback <best sellers block id>:fill',
      'blocks put <store> --file block.json',
      'blocks put <store> --id <block id> --status draft',
    ],
  },
  {
    command: 'merch-rules',
    kind: 'merch_rule',
    noun: 'merchandising rule',
    idName: 'rule id (ULID)',
    idField: 'id',
    newId: () => ({ id: newUlid() }),
    description: 'merchandising rules: collection + sort order, pins, boosts, banners (≤ 5), schedule, conditions',
    flags: (c) =>
      c
        .option('--id <ulid>', 'rule id (default: a new ULID)')
        .option('--name <name>', 'name')
        .option('--collection <handle>', 'collection handle')
        .option('--sort-order <code>', 'the sort order it applies to (default: the collection default)')
        .option('--pin <productId@position>', 'pin a product, repeatable', (v: string, prev: unknown[] | undefined) => {
          const m = /^(.+)@(\d{1,4})$/.exec(v);
          if (!m) throw new InvalidArgumentError('expected <product id>@<position>');
          return [...(prev ?? []), { product_id: PRODUCT_ID(m[1]), position: Number(m[2]) }];
        })
        .option('--start <iso>', 'schedule start (ISO 8601)')
        .option('--end <iso>', 'schedule end (ISO 8601)')
        .option('--priority <n>', 'lower first', intOf(MERCH_RULE, 'priority'))
        .addOption(new Option('--status <status>').choices(choices(MERCH_RULE, 'status'))),
    fromFlags: (o) => ({
      id: o.id,
      name: o.name,
      collection_handle: o.collection,
      sort_order_code: o.sortOrder,
      pins: o.pin,
      schedule:
        o.start !== undefined || o.end !== undefined ? defined({ start_at: o.start, end_at: o.end }) : undefined,
      priority: o.priority,
      status: o.status,
    }),
    summary: (r: ConfigPayload<'merch_rule'>) =>
      `${r.id}\t${r.status}\t${r.collection_handle}\t${r.sort_order_code ?? '(default)'}\t${r.name}`,
    examples: [
      'merch-rules put <store> --name "Shoes" --collection shoes --sort-order best_selling --pin 4242@1',
      'merch-rules put <store> --file rule.json',
    ],
  },
  {
    command: 'search-rules',
    kind: 'search_rule',
    noun: 'search rule',
    idName: 'rule id (ULID)',
    idField: 'id',
    newId: () => ({ id: newUlid() }),
    description:
      'search rules: request transforms targeted by query (replace/expand query, filter, pin, boost, sort, redirect)',
    flags: (c) =>
      c
        .option('--id <ulid>', 'rule id (default: a new ULID)')
        .option('--name <name>', 'name')
        .addOption(
          new Option('--match <how>', 'query targeting').choices(choices(SEARCH_RULE, 'targeting.query_match')),
        )
        .option('--query <q>', 'targeted query, repeatable', repeat)
        .option('--replace-query <q>', 'action: replace the query')
        .option('--expand <list>', 'action: expand the query with these queries', list)
        .option('--pin-products <list>', 'action: pin these product ids', list)
        .option('--sort-order <code>', 'action: use this sort order')
        .option('--redirect <url>', 'action: redirect')
        .option('--priority <n>', 'lower first', intOf(SEARCH_RULE, 'priority'))
        .addOption(new Option('--status <status>').choices(choices(SEARCH_RULE, 'status'))),
    fromFlags: (o) => {
      const actions: Record<string, unknown>[] = [];
      if (o.replaceQuery !== undefined) actions.push({ type: 'replace_query', query: o.replaceQuery });
      if (o.expand !== undefined) actions.push({ type: 'expand_query', queries: o.expand });
      if (o.pinProducts !== undefined) actions.push({ type: 'pin_products', product_ids: o.pinProducts });
      if (o.sortOrder !== undefined) actions.push({ type: 'set_sort_order', sort_order_code: o.sortOrder });
      if (o.redirect !== undefined) actions.push({ type: 'redirect', url: o.redirect });
      const targeting = defined({ query_match: o.match, queries: o.query });
      return {
        id: o.id,
        name: o.name,
        targeting: Object.keys(targeting).length ? targeting : undefined,
        actions: actions.length ? actions : undefined,
        priority: o.priority,
        status: o.status,
      };
    },
    summary: (r: ConfigPayload<'search_rule'>) =>
      `${r.id}\t${r.status}\t${r.targeting.query_match}:${r.targeting.queries.join('|')}\t${r.actions.map((a) => a.type).join(',')}\t${r.name}`,
    examples: ['search-rules put <store> --name "sneakers" --match exact --query sneakers --replace-query trainers'],
  },
  {
    command: 'redirects',
    kind: 'redirect_term',
    noun: 'redirect',
    idName: 'term',
    idField: 'term',
    normalizeId: normalizeTerm,
    description: 'redirect terms: a query (exact or semantic match) sends search and autocomplete to a URL',
    flags: (c) =>
      c
        .option('--term <term>', 'the query term')
        .option('--url <url>', 'absolute http(s) URL or a path starting with /')
        .addOption(
          new Option('--match <how>', choices(REDIRECT, 'match').join(' or ')).choices(choices(REDIRECT, 'match')),
        ),
    fromFlags: (o) => ({ term: o.term, url: o.url, match: o.match }),
    summary: (r: ConfigPayload<'redirect_term'>) => `${r.term}\t${r.match}\t${r.url}`,
    examples: [
      'redirects put <store> --term "gift cards" --url /products/gift-card --match semantic',
      'redirects delete <store> "gift cards"',
    ],
  },
  {
    command: 'synonyms',
    kind: 'synonym',
    noun: 'synonym set',
    idName: 'synonym id',
    idField: 'id',
    newId: () => ({ id: newUlid() }),
    description: 'synonyms: two-way sets or one-way expansions',
    flags: (c) =>
      c
        .option('--id <id>', 'synonym id (default: a new ULID)')
        .option('--terms <list>', 'two-way: comma-separated equivalent terms', list)
        .option('--term <term>', 'one-way: the query term')
        .option('--to <list>', 'one-way: what --term also matches', list),
    fromFlags: (o) => {
      if (o.terms !== undefined && (o.term !== undefined || o.to !== undefined))
        throw new UsageError('--terms (two-way) cannot be combined with --term/--to (one-way)');
      if (o.terms !== undefined) return { id: o.id, type: 'two_way', terms: o.terms };
      if (o.term !== undefined || o.to !== undefined)
        return { id: o.id, type: 'one_way', term: o.term, synonyms: o.to };
      return { id: o.id };
    },
    summary: (s: ConfigPayload<'synonym'>) =>
      s.type === 'two_way'
        ? `${s.id}\ttwo_way\t${s.terms.join(' = ')}`
        : `${s.id}\tone_way\t${s.term} → ${s.synonyms.join(', ')}`,
    examples: [
      'synonyms put <store> --terms tee,t-shirt',
      'synonyms put <store> --id pants --term pants --to trousers,chinos',
    ],
  },
  {
    command: 'breakouts',
    kind: 'variant_breakout',
    noun: 'variant breakout',
    idName: 'breakout id',
    idField: 'id',
    description: 'variant breakouts: show variants of an option as their own tiles',
    flags: (c) =>
      c
        .option('--id <id>', 'breakout id (default: the option code)')
        .option('--name <name>', 'name')
        .option('--option <code>', 'option code, e.g. color (normalized: lower case, spaces → _)')
        .addOption(new Option('--applies <where>', 'where it applies').choices(choices(BREAKOUT, 'applies')))
        .option('--title-value <bool>', 'include the option value in the tile title (default true)', bool)
        .option('--collections <list>', 'only these collection handles', list)
        .option('--products <list>', 'only these product ids', list)
        .addOption(new Option('--status <status>').choices(choices(BREAKOUT, 'status'))),
    fromFlags: (o) => ({
      id: o.id ?? (o.option ? String(o.option).trim().toLowerCase().replace(/\s+/g, '_') : undefined),
      name: o.name,
      option_code: o.option,
      applies: o.applies,
      include_option_value_in_title: o.titleValue,
      collection_handles: o.collections,
      product_ids: o.products,
      status: o.status,
    }),
    summary: (b: ConfigPayload<'variant_breakout'>) =>
      `${b.id}\t${b.status}\t${b.option_code}\t${b.applies}\t${b.name}`,
    examples: ['breakouts put <store> --name "Colours" --option Color --applies collections --title-value false'],
  },
  {
    command: 'ranking-rules',
    kind: 'ranking_rule',
    noun: 'ranking rule',
    idName: 'rule id (ULID)',
    idField: 'id',
    newId: () => ({ id: newUlid() }),
    description: 'ranking rules (text search): pin products for queries, or promote/demote matching products',
    flags: (c) =>
      c
        .option('--id <ulid>', 'rule id (default: a new ULID)')
        .option('--name <name>', 'name')
        .addOption(new Option('--type <type>').choices(choices(RANKING_RULE, 'type')))
        .option('--queries <list>', 'targeted queries (none = every search)', list)
        .option('--product-ids <list>', 'pin: product ids in order', list)
        .option('--match <json>', 'promote/demote: a condition group as JSON', jsonArg)
        .option('--magnitude <x>', range(bounds(RANKING_RULE, 'magnitude')), numberOf(RANKING_RULE, 'magnitude'))
        .addOption(new Option('--status <status>').choices(choices(RANKING_RULE, 'status'))),
    fromFlags: (o) => ({
      id: o.id,
      name: o.name,
      type: o.type,
      queries: o.queries,
      product_ids: o.productIds,
      match: o.match,
      magnitude: o.magnitude,
      status: o.status,
    }),
    summary: (r: ConfigPayload<'ranking_rule'>) =>
      `${r.id}\t${r.status}\t${r.type}\t${r.queries.join('|') || '(all)'}\t${r.name}`,
    examples: [
      'ranking-rules put <store> --name "Classic boots" --type pin --queries boots --product-ids 1234 --status published',
    ],
  },
];

/** the B2B kinds, under `b2b` (commands/b2b.ts) */
export const B2B_KINDS: KindSpec[] = [
  {
    command: 'locations',
    kind: 'b2b_company_location',
    noun: 'company location',
    idName: 'location id or gid',
    idField: 'gid',
    normalizeId: (id) => gidNumericId(id, 'CompanyLocation') ?? id,
    description: 'company locations: identity.companyLocationId → company, catalog and price list',
    flags: (c) =>
      c
        .option('--gid <gid>', 'gid://shopify/CompanyLocation/<id>')
        .option('--company <id>', 'company id (owner of the location)')
        .option('--catalog <id>', 'catalog assigned to the location')
        .option('--price-list <id>', 'price list of the catalog'),
    fromFlags: (o) => ({ gid: o.gid, company_id: o.company, catalog_id: o.catalog, price_list_id: o.priceList }),
    summary: (l: ConfigPayload<'b2b_company_location'>) =>
      `${l.gid}\tcompany ${l.company_id}\tcatalog ${l.catalog_id}\t${l.price_list_id ?? ''}`,
    examples: [
      'b2b locations put <store> --gid gid://shopify/CompanyLocation/555 --company 77 --catalog b2b-main --price-list wholesale',
    ],
  },
  {
    command: 'customers',
    kind: 'b2b_customer',
    noun: 'B2B customer',
    idName: 'customer id or gid',
    idField: 'customer_id',
    normalizeId: (id) => gidNumericId(id, 'Customer') ?? id,
    description: 'B2B customers: customer id → the companies it may buy for',
    flags: (c) =>
      c
        .option('--customer <id>', 'customer id or gid://shopify/Customer/<id>')
        .option('--companies <list>', 'company ids', list),
    fromFlags: (o) => ({ customer_id: o.customer, company_ids: o.companies }),
    summary: (c: ConfigPayload<'b2b_customer'>) => `${c.customer_id}\t${c.company_ids.join(',')}`,
    examples: ['b2b customers put <store> --customer 9001 --companies 77'],
  },
];
