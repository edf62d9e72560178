// The long-lived parts of the recommendation endpoints, built once per process and handed to the
// storefront plugin: the relations index (ClickHouse source, live changes from `agg:related`) and the
// background precompute of similar products.
import type { Redis } from 'ioredis';
import type { Db } from '../../../clickhouse/client.ts';
import { boughtAfterViewTotals, relationRows } from '../../../clickhouse/queries/related.ts';
import { parseRelatedMessage, RELATED_CHANNEL } from '../../../schemas/channels.ts';
import type { Logger } from '../../common/logger.ts';
import type { BlockRoutesOptions } from '../blocks.ts';
import { PacedPrecompute } from './precompute.ts';
import { RelationsIndex, type RelationsSource } from './relations.ts';

export type BlockServices = Pick<BlockRoutesOptions, 'relations' | 'precompute'> & { close(): void };

export function clickhouseRelationsSource(db: Db): RelationsSource {
  return {
    rows: (storeId, kind, anchors) => relationRows(db, { storeId, kind, anchors }),
    boughtTotals: (storeId, products) => boughtAfterViewTotals(db, { storeId, products }),
  };
}

export interface BlockServicesOptions {
  db: Db;
  /** a dedicated subscriber connection for `agg:related` (none: no live relation changes) */
  subscriber?: Redis;
  logger: Logger;
  /** full reload of the relations every this many ms */
  refreshMs?: number;
}

export async function createBlockServices(opts: BlockServicesOptions): Promise<BlockServices> {
  const relations = new RelationsIndex({
    source: clickhouseRelationsSource(opts.db),
    logger: opts.logger,
    refreshMs: opts.refreshMs,
  });
  const sub = opts.subscriber;
  if (sub) {
    sub.on('message', (channel: string, text: string) => {
      if (channel !== RELATED_CHANNEL) return;
      try {
        for (const m of parseRelatedMessage(text)) void relations.changed(m.store_id, m.product_ids);
      } catch (err) {
        opts.logger.warn({ err: (err as Error).message }, 'relations index: malformed agg:related message');
      }
    });
    // pub/sub has no replay: a resubscription reloads what is loaded
    let first = true;
    sub.on('ready', () => {
      if (!first) relations.reloadAll();
    });
    await sub.subscribe(RELATED_CHANNEL);
    first = false;
  }
  // paced by its cost: at most a fifth of the event loop however large the store (precompute.ts)
  const precompute = new PacedPrecompute();
  return {
    relations,
    precompute,
    close() {
      relations.close();
      precompute.close();
    },
  };
}
