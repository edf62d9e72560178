// The admin CLI: store configuration as events. Every command writes records to `stores.config.v1`
// through the store-config writer (services/store-config/writer.ts) or reads the topic back.
//
//   npm run admin -- stores create --name "Acme"          # prints the store id and its token (once)
//   npm run admin -- sort-orders put <store> --code newest --nickname Newest --expr published_at:desc
//   npm run admin -- config export <store> --out acme.json
//   npm run admin -- --help                               # every command has --help
//
// Connection settings come from the environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, KAFKA_TOPIC_PREFIX, …;
// see services/common/config.ts); the defaults point at the local stack (`npm start`). Documented in
// docs/admin.md. Exit codes: 0 ok, 1 unexpected failure, 2 invalid input (the message names the flag or
// field), 3 not found, 78 invalid environment.
import { readFileSync, writeFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ulid } from 'ulid';
import {
  ANCHOR_TYPES,
  type ConfigKind,
  type ConfigPayload,
  gidNumericId,
  normalizeTerm,
  STRATEGY_KEYS,
  STRATEGY_TYPES,
} from '../../schemas/config.ts';
import { toNumericId } from '../../schemas/fields.ts';
import { ConfigError, loadConfig } from '../common/config.ts';
import type { ConfigInputError, ConfigWriter } from '../store-config/writer.ts';

// ---------------------------------------------------------------------------------------------------
// output and errors

class UsageError extends Error {}

/** the store or item does not exist (the writer throws an error of the same name) */
class NotFoundError extends Error {
  override name = 'NotFoundError';
}

interface Globals {
  json?: boolean;
}

let writerInstance: ConfigWriter | undefined;
/** the writer (Kafka, registry, Avro) is loaded only when a command runs, so help and flag errors are fast */
async function writer(): Promise<ConfigWriter> {
  if (!writerInstance) {
    const config = loadConfig();
    const { openConfigWriter, writerOptionsFromConfig } = await import('../store-config/writer.ts');
    const pino = (await import('pino')).default;
    // logs go to stderr so that stdout carries only the command's output
    const logger = pino({ level: process.env.LOG_LEVEL ?? 'error', base: { service: 'admin' } }, pino.destination(2));
    writerInstance = openConfigWriter({ ...writerOptionsFromConfig(config, logger), clientId: 'admin-cli' });
  }
  return writerInstance;
}

function out(cmd: Command, human: string, data: unknown): void {
  const g = cmd.optsWithGlobals() as Globals;
  process.stdout.write(g.json ? `${JSON.stringify(data, null, 2)}\n` : `${human}\n`);
}

// ---------------------------------------------------------------------------------------------------
// flag parsers (InvalidArgumentError → "error: option '--x <n>' argument 'y' is invalid. <reason>")

const int = (min: number, max: number) => (v: string) => {
  if (!/^-?\d+$/.test(v)) throw new InvalidArgumentError('expected an integer');
  const n = Number(v);
  if (n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
  return n;
};
const num = (min: number, max: number) => (v: string) => {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('expected a number');
  if (n < min || n > max) throw new InvalidArgumentError(`expected a number from ${min} to ${max}`);
  return n;
};
const bool = (v: string) => {
  if (['true', 'yes', '1', 'on'].includes(v.toLowerCase())) return true;
  if (['false', 'no', '0', 'off'].includes(v.toLowerCase())) return false;
  throw new InvalidArgumentError('expected true or false');
};
const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const repeat = (v: string, prev: string[] | undefined) => [...(prev ?? []), v];
const jsonArg = (v: string) => {
  try {
    return JSON.parse(v);
  } catch (err) {
    throw new InvalidArgumentError(`not valid JSON (${(err as Error).message})`);
  }
};

function readJsonFile(file: string, flag: string): unknown {
  let text: string;
  try {
    text = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${flag}: ${file} is not valid JSON (${(err as Error).message})`);
  }
}

/** drop undefined values so that only given flags override */
function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

// ---------------------------------------------------------------------------------------------------
// generic item commands: put / list / get / delete for one kind

interface KindSpec {
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

function addItemCommands(program: Command, spec: KindSpec): Command {
  const group = program.command(spec.command).description(spec.description);
  group.addHelpText('after', `\nExamples:\n${spec.examples.map((e) => `  $ npm run admin -- ${e}`).join('\n')}\n`);

  const put = group
    .command('put')
    .description(
      `create or replace a ${spec.noun}; flags override --file/--json fields; with an existing ${spec.idName} and no --file, only the given fields change`,
    )
    .argument('<store>', 'store id')
    .option('-f, --file <path>', `the ${spec.noun} as JSON ("-" = stdin)`)
    .option('--json-item <json>', `the ${spec.noun} as inline JSON`, jsonArg);
  spec.flags(put);
  put.action(async (store: string, o: Record<string, any>, cmd: Command) => {
    const w = await writer();
    let base: Record<string, unknown> = {};
    if (o.file !== undefined) base = asObject(readJsonFile(o.file, '--file'), '--file');
    if (o.jsonItem !== undefined) base = { ...base, ...asObject(o.jsonItem, '--json-item') };
    const flags = defined(spec.fromFlags(o));
    let item: Record<string, unknown> = { ...base, ...flags };
    if (o.file === undefined && o.jsonItem === undefined && spec.idField && item[spec.idField] !== undefined) {
      const dir = await w.reader();
      const id = spec.normalizeId ? spec.normalizeId(String(item[spec.idField])) : String(item[spec.idField]);
      const existing = dir.item(store, spec.kind, id);
      if (existing) item = mergeDeep(existing as Record<string, unknown>, item);
    }
    if (spec.newId && spec.idField && item[spec.idField] === undefined) item = { ...spec.newId(), ...item };
    const r = await w.putConfig(store, spec.kind, item);
    out(cmd, `${spec.noun} ${r.itemId} written to store ${store} (offset ${r.offset})`, {
      store_id: store,
      kind: spec.kind,
      item_id: r.itemId,
      offset: r.offset,
      item: r.value,
    });
  });

  group
    .command('list')
    .description(`list the ${spec.noun}s of a store`)
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const dir = await (await writer()).reader();
      if (!dir.getStore(store)) throw new NotFoundError(`store ${store} does not exist`);
      const items = dir.items(store, spec.kind);
      out(cmd, items.length ? items.map((i) => spec.summary(i)).join('\n') : `(no ${spec.noun}s)`, items);
    });

  group
    .command('get')
    .description(`print one ${spec.noun} as JSON`)
    .argument('<store>', 'store id')
    .argument('<id>', spec.idName)
    .action(async (store: string, id: string) => {
      const dir = await (await writer()).reader();
      const item = dir.item(store, spec.kind, spec.normalizeId ? spec.normalizeId(id) : id);
      if (!item) throw new NotFoundError(`${spec.noun} ${id} does not exist in store ${store}`);
      process.stdout.write(`${JSON.stringify(item, null, 2)}\n`);
    });

  group
    .command('delete')
    .description(`delete a ${spec.noun} (a tombstone on the topic)`)
    .argument('<store>', 'store id')
    .argument('<id>', spec.idName)
    .action(async (store: string, id: string, _o: unknown, cmd: Command) => {
      const itemId = spec.normalizeId ? spec.normalizeId(id) : id;
      const r = await (await writer()).deleteConfig(store, spec.kind, itemId);
      out(cmd, `${spec.noun} ${itemId} deleted from store ${store} (offset ${r.offset})`, {
        store_id: store,
        kind: spec.kind,
        item_id: itemId,
        deleted: true,
        offset: r.offset,
      });
    });
  return group;
}

function asObject(v: unknown, flag: string): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new UsageError(`${flag}: expected a JSON object`);
  return v as Record<string, unknown>;
}

function mergeDeep(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const outObj: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    const b = outObj[k];
    outObj[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? mergeDeep(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return outObj;
}

const PRODUCT_ID = (v: string) => {
  if (toNumericId(v, 'Product') === undefined) throw new InvalidArgumentError('expected a product id or gid');
  return v;
};

// ---------------------------------------------------------------------------------------------------
// the kinds

const KINDS: KindSpec[] = [
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
        .addOption(new Option('--scope <scope>', 'where it is offered').choices(['search', 'collection', 'both']))
        .option(
          '--expr <attribute:direction[:weight]>',
          'an expression, repeatable, in order (e.g. published_at:desc)',
          (v: string, prev: unknown[] | undefined) => {
            const m = /^([A-Za-z_][A-Za-z0-9_.:-]*?):(asc|desc)(?::(\d+(?:\.\d+)?))?$/.exec(v);
            if (!m) throw new InvalidArgumentError('expected attribute:asc|desc[:weight]');
            return [
              ...(prev ?? []),
              defined({ attribute: m[1], direction: m[2], weight: m[3] === undefined ? undefined : Number(m[3]) }),
            ];
          },
        )
        .option('--soft-demotion-threshold <x>', '0-1 (search only)', num(0, 1)),
    fromFlags: (o) => ({
      code: o.code,
      nickname: o.nickname,
      scope: o.scope,
      expressions: o.expr,
      soft_demotion_threshold: o.softDemotionThreshold,
    }),
    summary: (s: ConfigPayload<'sort_order'>) =>
      `${s.code}\t${s.nickname}\t${s.scope}\t${s.expressions.map((e) => `${e.attribute}:${e.direction}`).join(' ')}`,
    examples: [
      'sort-orders put <store> --code newest --nickname Newest --expr published_at:desc',
      'sort-orders put <store> --code price_asc --nickname "Price: low to high" --scope collection --expr price:asc',
      'sort-orders delete <store> newest',
    ],
  },
  {
    command: 'blocks',
    kind: 'block',
    noun: 'block',
    idName: 'block id (ULID)',
    idField: 'id',
    newId: () => ({ id: ulid() }),
    description: 'recommendation blocks: anchor, strategy, rules, safeguards, fallback chain',
    flags: (c) =>
      c
        .option('--id <ulid>', 'block id (default: a new ULID)')
        .option('--title <title>', 'title')
        .addOption(new Option('--anchor <type>', 'anchor type').choices([...ANCHOR_TYPES]))
        .addOption(new Option('--strategy <key>', 'strategy key').choices(Object.keys(STRATEGY_KEYS)))
        .addOption(
          new Option('--strategy-type <type>', 'strategy type (derived from the key when omitted)').choices([
            ...STRATEGY_TYPES,
          ]),
        )
        .option('--product-ids <list>', 'manual_curation: comma-separated product ids', list)
        .option('--metafield <namespace.key>', 'metafield_references: the metafield')
        .option('--min-products <n>', 'safeguard: minimum products (else the fallback runs)', int(0, 100))
        .option('--max-products <n>', 'safeguard: maximum products', int(1, 100))
        .option('--hide-out-of-stock <bool>', 'safeguard: hide out-of-stock products', bool)
        .option('--personalization <x>', 'safeguard: personalization strength 0-1', num(0, 1))
        .option(
          '--fallback <id[:replace|fill]>',
          'fallback block, repeatable, in order',
          (v: string, prev: unknown[] | undefined) => {
            const m = /^([0-9A-HJKMNP-TV-Z]{26})(?::(replace|fill))?$/.exec(v);
            if (!m) throw new InvalidArgumentError('expected <block ULID>[:replace|fill]');
            return [...(prev ?? []), { block_id: m[1], mode: m[2] ?? 'replace' }];
          },
        )
        .option('--priority <n>', 'lower first', int(0, 1_000_000))
        .addOption(new Option('--status <status>', 'published blocks are served').choices(['published', 'draft'])),
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
    newId: () => ({ id: ulid() }),
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
        .option('--priority <n>', 'lower first', int(0, 1_000_000))
        .addOption(new Option('--status <status>').choices(['published', 'draft'])),
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
    newId: () => ({ id: ulid() }),
    description:
      'search rules: request transforms targeted by query (replace/expand query, filter, pin, boost, sort, redirect)',
    flags: (c) =>
      c
        .option('--id <ulid>', 'rule id (default: a new ULID)')
        .option('--name <name>', 'name')
        .addOption(new Option('--match <how>', 'query targeting').choices(['any', 'exact', 'contains', 'starts_with']))
        .option('--query <q>', 'targeted query, repeatable', repeat)
        .option('--replace-query <q>', 'action: replace the query')
        .option('--expand <list>', 'action: expand the query with these queries', list)
        .option('--pin-products <list>', 'action: pin these product ids', list)
        .option('--sort-order <code>', 'action: use this sort order')
        .option('--redirect <url>', 'action: redirect')
        .option('--priority <n>', 'lower first', int(0, 1_000_000))
        .addOption(new Option('--status <status>').choices(['published', 'draft'])),
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
        .addOption(new Option('--match <how>', 'exact or semantic').choices(['exact', 'semantic'])),
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
    newId: () => ({ id: ulid() }),
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
        .addOption(new Option('--applies <where>', 'where it applies').choices(['both', 'collections', 'search']))
        .option('--title-value <bool>', 'include the option value in the tile title (default true)', bool)
        .option('--collections <list>', 'only these collection handles', list)
        .option('--products <list>', 'only these product ids', list)
        .addOption(new Option('--status <status>').choices(['published', 'draft'])),
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
    newId: () => ({ id: ulid() }),
    description: 'ranking rules (text search): pin products for queries, or promote/demote matching products',
    flags: (c) =>
      c
        .option('--id <ulid>', 'rule id (default: a new ULID)')
        .option('--name <name>', 'name')
        .addOption(new Option('--type <type>').choices(['pin', 'promote', 'demote']))
        .option('--queries <list>', 'targeted queries (none = every search)', list)
        .option('--product-ids <list>', 'pin: product ids in order', list)
        .option('--match <json>', 'promote/demote: a condition group as JSON', jsonArg)
        .option('--magnitude <x>', '0-1', num(0, 1))
        .addOption(new Option('--status <status>').choices(['published', 'draft'])),
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

// ---------------------------------------------------------------------------------------------------
// the program

export function buildProgram(): Command {
  const program = new Command('admin')
    .description(
      'Store configuration for the storefront discovery platform (writes stores.config.v1). Connection: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, KAFKA_TOPIC_PREFIX.',
    )
    .option('--json', 'print machine-readable JSON')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();

  // stores
  const stores = program.command('stores').description('create, list, suspend and resume stores');
  stores
    .command('create')
    .description('create a store; prints its id and its first access token (shown once)')
    .requiredOption('--name <name>', 'store name')
    .option('--id <id>', 'store id (default: a new ULID)')
    .option('--market <code>', 'primary market code (define it with `markets put`)')
    .addOption(
      new Option('--market-mode <mode>', 'market application mode').choices(['strict', 'pricing_only', 'ignore']),
    )
    .addOption(new Option('--autocomplete-mode <mode>', 'autocomplete regional mode').choices(['per_region', 'global']))
    .action(async (o: Record<string, any>, cmd: Command) => {
      const r = await (await writer()).createStore({
        name: o.name,
        storeId: o.id,
        primaryMarket: o.market,
        marketMode: o.marketMode,
        autocompleteMode: o.autocompleteMode,
      });
      out(
        cmd,
        `store created\n  store id: ${r.storeId}\n  token:    ${r.token}\n  token id: ${r.tokenId}\nThe token is shown only now; store it safely. Revoke with: tokens revoke ${r.storeId} ${r.tokenId}`,
        { store_id: r.storeId, token: r.token, token_id: r.tokenId, offset: r.offset },
      );
    });
  stores
    .command('list')
    .description('list stores')
    .action(async (_o: unknown, cmd: Command) => {
      const all = (await (await writer()).reader()).listStores();
      out(cmd, all.length ? all.map((s) => `${s.storeId}\t${s.status}\t${s.name}`).join('\n') : '(no stores)', all);
    });
  stores
    .command('show')
    .description('show a store and how many items of each kind it has')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const dir = await (await writer()).reader();
      const s = dir.getStore(store);
      if (!s) throw new NotFoundError(`store ${store} does not exist`);
      const counts = Object.fromEntries(
        (
          [
            'market',
            'sort_order',
            'block',
            'merch_rule',
            'merch_preview',
            'search_rule',
            'redirect_term',
            'synonym',
            'variant_breakout',
            'autocomplete_curation',
            'b2b_company_location',
            'b2b_customer',
            'ranking_rule',
          ] as ConfigKind[]
        ).map((k) => [k, dir.items(store, k).length]),
      );
      out(
        cmd,
        `${JSON.stringify(s, null, 2)}\n${Object.entries(counts)
          .map(([k, n]) => `${k}: ${n}`)
          .join('\n')}`,
        { store: s, counts },
      );
    });
  for (const [name, fn, done] of [
    ['suspend', 'suspendStore', 'suspended (storefront requests answer 402)'],
    ['resume', 'resumeStore', 'active again'],
  ] as const) {
    stores
      .command(name)
      .description(
        name === 'suspend'
          ? 'suspend a store: every storefront request answers 402 until resumed'
          : 'lift a suspension',
      )
      .argument('<store>', 'store id')
      .action(async (store: string, _o: unknown, cmd: Command) => {
        const r = await (await writer())[fn](store);
        out(cmd, `store ${store} ${done}`, {
          store_id: store,
          status: name === 'suspend' ? 'suspended' : 'active',
          offset: r.offset,
        });
      });
  }
  stores
    .command('update')
    .description('change store settings')
    .argument('<store>', 'store id')
    .option('--name <name>', 'store name')
    .option('--market <code>', 'primary market code ("none" to clear)')
    .addOption(new Option('--market-mode <mode>').choices(['strict', 'pricing_only', 'ignore']))
    .option('--brand-prompt <text>', 'brand description for autocomplete curation (≤ 2000 characters)')
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const patch = defined({
        name: o.name,
        primary_market: o.market === undefined ? undefined : o.market === 'none' ? null : o.market,
        market_mode: o.marketMode,
        brand_prompt: o.brandPrompt,
      });
      if (!Object.keys(patch).length)
        throw new UsageError('nothing to change: give at least one of --name, --market, --market-mode, --brand-prompt');
      const r = await (await writer()).updateStore(store, patch);
      out(cmd, `store ${store} updated`, { store: r.store, offset: r.offset });
    });
  stores
    .command('delete')
    .description('delete a store and all its configuration (tombstones); requires --yes')
    .argument('<store>', 'store id')
    .option('--yes', 'confirm')
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      if (!o.yes) throw new UsageError('--yes: deleting a store removes all its configuration; confirm with --yes');
      const r = await (await writer()).deleteStore(store);
      out(cmd, `store ${store} deleted`, { store_id: store, deleted: true, offset: r.offset });
    });

  // tokens
  const tokens = program.command('tokens').description('storefront access tokens (only their SHA-256 is stored)');
  tokens
    .command('issue')
    .description('issue a new token for a store (shown once)')
    .argument('<store>', 'store id')
    .option('--label <label>', 'what the token is for')
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const r = await (await writer()).issueToken(store, o.label ?? null);
      out(cmd, `token: ${r.token}\ntoken id: ${r.tokenId}\nThe token is shown only now.`, {
        store_id: store,
        token: r.token,
        token_id: r.tokenId,
        offset: r.offset,
      });
    });
  tokens
    .command('revoke')
    .description('revoke a token: requests with it answer 401')
    .argument('<store>', 'store id')
    .argument('<tokenId>', 'token id (from `tokens list`)')
    .action(async (store: string, tokenId: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).revokeToken(store, tokenId);
      out(cmd, `token ${tokenId} revoked`, { store_id: store, token_id: tokenId, revoked: true, offset: r.offset });
    });
  tokens
    .command('list')
    .description('list the tokens of a store (ids, labels, dates; never the tokens)')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const dir = await (await writer()).reader();
      if (!dir.getStore(store)) throw new NotFoundError(`store ${store} does not exist`);
      const items = dir.items(store, 'access_token').map(({ sha256: _h, ...t }) => t);
      out(
        cmd,
        items
          .map((t) => `${t.token_id}\t${t.revoked_at ? `revoked ${t.revoked_at}` : 'active'}\t${t.label ?? ''}`)
          .join('\n') || '(no tokens)',
        items,
      );
    });

  for (const spec of KINDS) addItemCommands(program, spec);

  // previews
  const previews = program
    .command('previews')
    .description('merchandising previews: a rule served for browse requests with preview_id, for 1 hour');
  previews
    .command('create')
    .description(
      'create a preview from a rule (file, inline JSON, or an existing rule with changes); prints the preview id',
    )
    .argument('<store>', 'store id')
    .option('-f, --file <path>', 'the rule as JSON ("-" = stdin)')
    .option('--from-rule <ulid>', 'start from an existing merchandising rule')
    .option('--json-item <json>', 'rule fields as inline JSON (applied last)', jsonArg)
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const w = await writer();
      let rule: Record<string, unknown> = {};
      if (o.fromRule) {
        const existing = (await w.reader()).item(store, 'merch_rule', o.fromRule);
        if (!existing) throw new NotFoundError(`merchandising rule ${o.fromRule} does not exist in store ${store}`);
        rule = { ...existing };
      }
      if (o.file !== undefined) rule = { ...rule, ...asObject(readJsonFile(o.file, '--file'), '--file') };
      if (o.jsonItem !== undefined) rule = { ...rule, ...asObject(o.jsonItem, '--json-item') };
      if (!o.fromRule && o.file === undefined && o.jsonItem === undefined)
        throw new UsageError('give the rule with --file, --json-item or --from-rule');
      const r = await w.putConfig(store, 'merch_preview', { rule: { id: null, ...rule } });
      out(cmd, `preview id: ${r.itemId}\nexpires at: ${r.value.expires_at}`, {
        store_id: store,
        preview_id: r.itemId,
        expires_at: r.value.expires_at,
        offset: r.offset,
      });
    });
  previews
    .command('list')
    .description('list live previews')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const items = (await (await writer()).reader()).items(store, 'merch_preview');
      out(
        cmd,
        items.map((p) => `${p.id}\texpires ${p.expires_at}\t${p.rule.collection_handle}\t${p.rule.name}`).join('\n') ||
          '(no previews)',
        items,
      );
    });
  previews
    .command('delete')
    .description('end a preview now')
    .argument('<store>', 'store id')
    .argument('<previewId>', 'preview id (UUID)')
    .action(async (store: string, id: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).deleteConfig(store, 'merch_preview', id);
      out(cmd, `preview ${id} deleted`, { store_id: store, preview_id: id, deleted: true, offset: r.offset });
    });
  previews
    .command('prune')
    .description('delete (tombstone) the expired previews of a store')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const n = await (await writer()).pruneExpiredPreviews(store);
      out(cmd, `${n} expired preview(s) deleted`, { store_id: store, deleted: n });
    });

  // autocomplete
  const ac = program.command('autocomplete').description('autocomplete: regional mode and brand curation');
  ac.command('mode')
    .description(
      'per_region (default): suggestions from the shopper country, store-wide fallback; global: one set for all',
    )
    .argument('<store>', 'store id')
    .argument('<mode>', 'per_region | global')
    .action(async (store: string, mode: string, _o: unknown, cmd: Command) => {
      if (mode !== 'per_region' && mode !== 'global')
        throw new UsageError(`<mode>: expected per_region or global, got ${JSON.stringify(mode)}`);
      const r = await (await writer()).updateStore(store, { autocomplete_mode: mode });
      out(cmd, `autocomplete mode of ${store}: ${mode}`, {
        store_id: store,
        autocomplete_mode: mode,
        offset: r.offset,
      });
    });
  ac.command('curate')
    .description('allow or suppress a query (cluster) in suggestions, optionally with a display label')
    .argument('<store>', 'store id')
    .requiredOption('--query <q>', 'canonical query or cluster label')
    .option('--allow', 'allowed (default)')
    .option('--deny', 'suppressed from suggestions')
    .option('--label <label>', 'display label shown instead of the query')
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      if (o.allow && o.deny) throw new UsageError('--allow and --deny exclude each other');
      const r = await (await writer()).putConfig(store, 'autocomplete_curation', {
        query: o.query,
        allowed: !o.deny,
        display_label: o.label ?? null,
      });
      out(cmd, `curation for "${r.itemId}" written`, { store_id: store, item: r.value, offset: r.offset });
    });
  ac.command('curations')
    .description('list curations')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const items = (await (await writer()).reader()).items(store, 'autocomplete_curation');
      out(
        cmd,
        items.map((c) => `${c.query}\t${c.allowed ? 'allowed' : 'denied'}\t${c.display_label ?? ''}`).join('\n') ||
          '(no curations)',
        items,
      );
    });
  ac.command('uncurate')
    .description('remove a curation')
    .argument('<store>', 'store id')
    .argument('<query>', 'the curated query')
    .action(async (store: string, q: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).deleteConfig(store, 'autocomplete_curation', normalizeTerm(q));
      out(cmd, `curation for "${normalizeTerm(q)}" removed`, {
        store_id: store,
        item_id: normalizeTerm(q),
        deleted: true,
        offset: r.offset,
      });
    });
  ac.command('brand-prompt')
    .description('set the brand description curation uses (≤ 2000 characters; "" clears)')
    .argument('<store>', 'store id')
    .argument('<text>', 'the description')
    .action(async (store: string, text: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).updateStore(store, { brand_prompt: text === '' ? null : text });
      out(cmd, `brand prompt of ${store} updated`, { store_id: store, offset: r.offset });
    });

  // b2b
  const b2b = program
    .command('b2b')
    .description('B2B: company locations (catalog, price list) and customers (companies)');
  addItemCommands(b2b, {
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
  });
  addItemCommands(b2b, {
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
  });

  // webhook secrets
  const hooks = program
    .command('webhook-secrets')
    .description('HMAC secrets of the catalog webhooks of a store (several during a rotation)');
  hooks
    .command('add')
    .description('add a secret (generated unless --secret); printed once')
    .argument('<store>', 'store id')
    .option('--secret <secret>', 'the platform’s webhook secret (at least 16 characters)')
    .option('--label <label>', 'what it is for')
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const { randomBytes } = await import('node:crypto');
      const secret = o.secret ?? randomBytes(32).toString('hex');
      const r = await (await writer()).putConfig(store, 'webhook_secret', {
        id: ulid(),
        secret,
        label: o.label ?? null,
        created_at: new Date().toISOString(),
      });
      out(cmd, `webhook secret ${r.itemId} added${o.secret ? '' : `\nsecret: ${secret} (shown only now)`}`, {
        store_id: store,
        id: r.itemId,
        secret: o.secret ? undefined : secret,
        offset: r.offset,
      });
    });
  hooks
    .command('list')
    .description('list the secrets (ids, labels, dates; never the secrets)')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const items = (await (await writer()).reader())
        .items(store, 'webhook_secret')
        .map(({ secret: _s, ...rest }) => rest);
      out(
        cmd,
        items.map((i) => `${i.id}\t${i.created_at ?? ''}\t${i.label ?? ''}`).join('\n') || '(no webhook secrets)',
        items,
      );
    });
  hooks
    .command('delete')
    .description('remove a secret (webhooks signed with it answer 401)')
    .argument('<store>', 'store id')
    .argument('<id>', 'secret id')
    .action(async (store: string, id: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).deleteConfig(store, 'webhook_secret', id);
      out(cmd, `webhook secret ${id} deleted`, { store_id: store, id, deleted: true, offset: r.offset });
    });

  // media preloads
  program
    .command('media-preloads')
    .description('image preload (Link header) settings of a store')
    .command('set')
    .description('change the preload settings (only the given fields)')
    .argument('<store>', 'store id')
    .option('--enabled <bool>', 'send Link preload headers', bool)
    .option('--srcset-sizes <list>', 'srcset widths, integers 1-10000', (v: string) =>
      list(v).map((s) => {
        if (!/^\d+$/.test(s) || Number(s) < 1 || Number(s) > 10000)
          throw new InvalidArgumentError(`${JSON.stringify(s)} is not an integer from 1 to 10000`);
        return Number(s);
      }),
    )
    .option('--rewrite-domain <host>', 'image host to rewrite to ("none" = the storefront domain)')
    .option('--rewrite-urls <bool>', 'rewrite image URLs', bool)
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const patch = defined({
        enabled: o.enabled,
        srcset_sizes: o.srcsetSizes,
        rewrite_domain: o.rewriteDomain === undefined ? undefined : o.rewriteDomain === 'none' ? null : o.rewriteDomain,
        rewrite_urls: o.rewriteUrls,
      });
      if (!Object.keys(patch).length)
        throw new UsageError('nothing to change: give --enabled, --srcset-sizes, --rewrite-domain or --rewrite-urls');
      const r = await (await writer()).updateStore(store, { media_preloads: patch });
      out(cmd, `media preloads of ${store}: ${JSON.stringify(r.store.mediaPreloads)}`, {
        store_id: store,
        media_preloads: r.store.mediaPreloads,
        offset: r.offset,
      });
    });

  // export / import
  const config = program.command('config').description('export and import a store configuration as one JSON document');
  config
    .command('export')
    .description('export a store configuration (no tokens, no previews)')
    .argument('<store>', 'store id')
    .option('-o, --out <file>', 'write to a file instead of stdout')
    .action(async (store: string, o: Record<string, any>) => {
      const doc = await (await writer()).exportConfig(store);
      const text = `${JSON.stringify(doc, null, 2)}\n`;
      if (o.out) {
        writeFileSync(o.out, text);
        process.stderr.write(`exported ${store} to ${o.out}\n`);
      } else process.stdout.write(text);
    });
  config
    .command('import')
    .description('import a document: into a new store (default; prints its token) or into --store')
    .argument('<file>', 'the exported JSON document ("-" = stdin)')
    .option('--store <id>', 'target store id (created when it does not exist)')
    .option('--name <name>', 'store name (default: the document)')
    .option('--prune', 'with --store: delete items the document does not have')
    .action(async (file: string, o: Record<string, any>, cmd: Command) => {
      const doc = readJsonFile(file, '<file>');
      const r = await (await writer()).importConfig(doc, { storeId: o.store, name: o.name, prune: Boolean(o.prune) });
      out(
        cmd,
        `${r.created ? 'created' : 'updated'} store ${r.storeId}: ${r.written} item(s) written, ${r.deleted} deleted${r.token ? `\ntoken: ${r.token} (shown only now)` : ''}`,
        {
          store_id: r.storeId,
          created: r.created,
          token: r.token,
          written: r.written,
          deleted: r.deleted,
          offset: r.offset,
        },
      );
    });
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    return report(err);
  } finally {
    await writerInstance?.close().catch(() => undefined);
  }
}

function report(err: unknown): number {
  if (err instanceof CommanderError) {
    // commander already printed its message (or the help)
    return err.exitCode === 0 ? 0 : 2;
  }
  if ((err as Error)?.name === 'ConfigInputError') {
    for (const i of (err as ConfigInputError).issues) process.stderr.write(`error: ${i.path}: ${i.message}\n`);
    return 2;
  }
  if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n`);
    return 2;
  }
  if ((err as Error)?.name === 'NotFoundError') {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 3;
  }
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    return 78;
  }
  const e = err as Error & { name?: string };
  if (e?.name === 'RegistryError') {
    process.stderr.write(
      `error: schema registry: ${e.message} (SCHEMA_REGISTRY_URL: ${process.env.SCHEMA_REGISTRY_URL || 'the local stack'})\n`,
    );
    return 1;
  }
  if (e?.name?.startsWith('KafkaJS')) {
    process.stderr.write(
      `error: Kafka: ${e.message} (brokers: ${process.env.KAFKA_BROKERS || 'the local stack, KAFKA_BROKERS unset'})\n`,
    );
    return 1;
  }
  process.stderr.write(`error: ${e?.stack ?? String(err)}\n`);
  return 1;
}

if (import.meta.main) {
  // kafkajs 2.2.4 schedules a negative timeout when a response carries no throttle time (Node ≥ 22 warns
  // about it); createKafka stops that, but a client made before it may still warn: keep the CLI's stderr
  // for real messages
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (w.name !== 'TimeoutNegativeWarning') process.stderr.write(`${w.name}: ${w.message}\n`);
  });
  const code = await main(process.argv.slice(2));
  process.exit(code);
}
