// `stores`: create, list, show, suspend, resume, update, delete.
import { type Command, Option } from 'commander';
import { CONFIG_KINDS, StoreConfig } from '../../../schemas/config.ts';
import { bounds, choices } from '../flags.ts';
import { defined, NotFoundError, out, UsageError, writer } from '../io.ts';

/** the kinds `stores show` counts: every item kind but tokens and webhook secrets (never shown) */
const COUNTED_KINDS = CONFIG_KINDS.filter((k) => !['store', 'access_token', 'webhook_secret'].includes(k));
const BRAND_PROMPT_MAX = bounds(StoreConfig, 'brand_prompt').max;

export function registerStores(program: Command): void {
  const stores = program.command('stores').description('create, list, suspend and resume stores');
  stores
    .command('create')
    .description('create a store; prints its id and its first access token (shown once)')
    .requiredOption('--name <name>', 'store name')
    .option('--id <id>', 'store id (default: a new ULID)')
    .option('--market <code>', 'primary market code (define it with `markets put`)')
    .addOption(
      new Option('--market-mode <mode>', 'market application mode').choices(choices(StoreConfig, 'market_mode')),
    )
    .addOption(
      new Option('--autocomplete-mode <mode>', 'autocomplete regional mode').choices(
        choices(StoreConfig, 'autocomplete_mode'),
      ),
    )
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
      const counts = Object.fromEntries(COUNTED_KINDS.map((k) => [k, dir.items(store, k).length]));
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
    .addOption(new Option('--market-mode <mode>').choices(choices(StoreConfig, 'market_mode')))
    .option('--brand-prompt <text>', `brand description for autocomplete curation (≤ ${BRAND_PROMPT_MAX} characters)`)
    .addOption(
      new Option(
        '--inline-collection-redirects <on|off>',
        'serve search redirects to plain collection pages inline',
      ).choices(['on', 'off']),
    )
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const patch = defined({
        name: o.name,
        primary_market: o.market === undefined ? undefined : o.market === 'none' ? null : o.market,
        market_mode: o.marketMode,
        brand_prompt: o.brandPrompt,
        inline_collection_redirects:
          o.inlineCollectionRedirects === undefined ? undefined : o.inlineCollectionRedirects === 'on',
      });
      if (!Object.keys(patch).length)
        throw new UsageError(
          'nothing to change: give at least one of --name, --market, --market-mode, --brand-prompt, --inline-collection-redirects',
        );
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
}
