// `autocomplete`: regional mode, curations, brand prompt.
import type { Command } from 'commander';
import { normalizeTerm, StoreConfig } from '../../../schemas/config.ts';
import { bounds } from '../flags.ts';
import { out, UsageError, writer } from '../io.ts';

const MODES = StoreConfig.shape.autocomplete_mode.unwrap().options;
const isMode = (m: string): m is (typeof MODES)[number] => (MODES as readonly string[]).includes(m);
const BRAND_PROMPT_MAX = bounds(StoreConfig, 'brand_prompt').max;

export function registerAutocomplete(program: Command): void {
  const ac = program.command('autocomplete').description('autocomplete: regional mode and brand curation');
  ac.command('mode')
    .description(
      'per_region (default): suggestions from the shopper country, store-wide fallback; global: one set for all',
    )
    .argument('<store>', 'store id')
    .argument('<mode>', MODES.join(' | '))
    .action(async (store: string, mode: string, _o: unknown, cmd: Command) => {
      if (!isMode(mode)) throw new UsageError(`<mode>: expected ${MODES.join(' or ')}, got ${JSON.stringify(mode)}`);
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
    .description(`set the brand description curation uses (≤ ${BRAND_PROMPT_MAX} characters; "" clears)`)
    .argument('<store>', 'store id')
    .argument('<text>', 'the description')
    .action(async (store: string, text: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).updateStore(store, { brand_prompt: text === '' ? null : text });
      out(cmd, `brand prompt of ${store} updated`, { store_id: store, offset: r.offset });
    });
}
