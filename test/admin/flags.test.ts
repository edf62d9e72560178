// The admin CLI's flags take their bounds and choices from the zod schemas of schemas/config.ts: the
// flag rejects exactly what the schema rejects, and changing the schema changes the flag.
import type { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { CONFIG_SCHEMAS, StoreConfig } from '../../schemas/config.ts';
import { buildProgram } from '../../services/admin/cli.ts';
import { bounds, choices, field } from '../../services/admin/flags.ts';
import { KINDS } from '../../services/admin/kinds.ts';

function option(path: string, flag: string): Option {
  let cmd: Command = buildProgram();
  for (const name of path.split(' ')) cmd = cmd.commands.find((c) => c.name() === name) as Command;
  const o = cmd.options.find((x) => x.long === flag);
  if (!o) throw new Error(`${path} has no ${flag}`);
  return o;
}

describe('admin flags read from the config schemas', () => {
  it('reads enum options and bounds through defaults, nullables, transforms, nested objects and arrays', () => {
    expect(choices(StoreConfig, 'market_mode')).toEqual(['strict', 'pricing_only', 'ignore']);
    expect(choices(CONFIG_SCHEMAS.block, 'fallback[].mode')).toEqual(['replace', 'fill']);
    expect(choices(CONFIG_SCHEMAS.sort_order, 'expressions[].direction')).toEqual(['asc', 'desc']);
    expect(bounds(CONFIG_SCHEMAS.block, 'safeguards.max_products')).toEqual({ min: 1, max: 100 });
    expect(bounds(StoreConfig, 'media_preloads.srcset_sizes[]')).toEqual({ min: 1, max: 10000 });
    expect(bounds(StoreConfig, 'brand_prompt').max).toBe(2000);
    expect(() => field(StoreConfig, 'no_such_field')).toThrow(/no field "no_such_field"/);
  });

  it('offers the choices of the schema and rejects out-of-bounds values with the schema bounds', () => {
    expect(option('blocks put', '--anchor').argChoices).toEqual(choices(CONFIG_SCHEMAS.block, 'anchor_type'));
    expect(option('blocks put', '--strategy').argChoices).toContain('frequently_bought_together');
    expect(option('stores create', '--autocomplete-mode').argChoices).toEqual(['per_region', 'global']);
    expect(option('search-rules put', '--match').argChoices).toEqual(['any', 'exact', 'contains', 'starts_with']);
    const maxProducts = option('blocks put', '--max-products').parseArg as (v: string, p: unknown) => number;
    expect(maxProducts('100', undefined)).toBe(100);
    expect(() => maxProducts('101', undefined)).toThrow('expected an integer from 1 to 100');
    const threshold = option('sort-orders put', '--soft-demotion-threshold').parseArg as (
      v: string,
      p: unknown,
    ) => number;
    expect(threshold('0.25', undefined)).toBe(0.25);
    expect(() => threshold('1.5', undefined)).toThrow('expected a number from 0 to 1');
  });

  it('sets a sort order as the default of collections with a repeatable --default-for', async () => {
    const cmd = buildProgram()
      .commands.find((c) => c.name() === 'sort-orders')
      ?.commands.find((c) => c.name() === 'put') as Command;
    cmd.exitOverride().action(() => {});
    await cmd.parseAsync(['s1', '--code', 'newest', '--default-for', 'new-in', '--default-for', 'sale'], {
      from: 'user',
    });
    const spec = KINDS.find((k) => k.kind === 'sort_order');
    const item = spec?.fromFlags(cmd.opts());
    expect(item).toMatchObject({ code: 'newest', default_for_collections: ['new-in', 'sale'] });
    expect(
      CONFIG_SCHEMAS.sort_order.safeParse({
        ...item,
        nickname: 'Newest',
        expressions: [{ attribute: 'published_at', direction: 'desc' }],
      }).success,
    ).toBe(true);
  });
});
