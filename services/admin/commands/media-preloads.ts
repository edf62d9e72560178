// `media-preloads set`: image preload (Link header) settings of a store.
import { type Command, InvalidArgumentError } from 'commander';
import { MediaPreloads } from '../../../schemas/config.ts';
import { bool, bounds, list } from '../flags.ts';
import { defined, out, UsageError, writer } from '../io.ts';

const SIZE = bounds(MediaPreloads, 'srcset_sizes[]');

export function registerMediaPreloads(program: Command): void {
  program
    .command('media-preloads')
    .description('image preload (Link header) settings of a store')
    .command('set')
    .description('change the preload settings (only the given fields)')
    .argument('<store>', 'store id')
    .option('--enabled <bool>', 'send Link preload headers', bool)
    .option('--srcset-sizes <list>', `srcset widths, integers ${SIZE.min}-${SIZE.max}`, (v: string) =>
      list(v).map((s) => {
        if (!/^\d+$/.test(s) || Number(s) < SIZE.min || Number(s) > SIZE.max)
          throw new InvalidArgumentError(`${JSON.stringify(s)} is not an integer from ${SIZE.min} to ${SIZE.max}`);
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
}
