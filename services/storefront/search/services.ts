// The long-lived parts of search, built once per process and handed to the storefront plugin: the
// learned index (ClickHouse source, live changes from `agg:search`), the semantic provider, the Redis
// prepared-search state and the feedback writer.
import type { Redis } from 'ioredis';
import type { Db } from '../../../clickhouse/client.ts';
import { learnedForQueries, learnedForStore } from '../../../clickhouse/queries/learned.ts';
import { parseSearchMessage, SEARCH_CHANNEL } from '../../../schemas/channels.ts';
import type { Logger } from '../../common/logger.ts';
import type { SearchRoutesOptions } from '../search.ts';
import { LearnedIndex, type LearnedSource } from './learned.ts';
import { SearchState } from './prepared.ts';
import { CooccurrenceProvider, type SemanticProvider } from './semantic.ts';

export type SearchServices = Pick<SearchRoutesOptions, 'learned' | 'semantic' | 'state' | 'recordFeedback'>;

export function clickhouseLearnedSource(db: Db): LearnedSource {
  return {
    store: (storeId) => learnedForStore(db, { storeId }),
    queries: (storeId, queries) => learnedForQueries(db, { storeId, queries: [...queries] }),
  };
}

/** the feedback writer of harnesses and benches without a log: feedback answers 503 */
export const noFeedbackLog: SearchRoutesOptions['recordFeedback'] = async () => {
  throw new Error('no log to write feedback to');
};

export interface SearchServicesOptions {
  db: Db;
  /** the shared command connection (prepared searches, search context) */
  redis: Redis;
  /** a dedicated subscriber connection for `agg:search` (none: no live learned changes) */
  subscriber?: Redis;
  logger: Logger;
  recordFeedback: SearchRoutesOptions['recordFeedback'];
  semantic?: SemanticProvider;
  /** full reload of the learned evidence every this many ms */
  learnedRefreshMs?: number;
}

export async function createSearchServices(
  opts: SearchServicesOptions,
): Promise<SearchServices & { close(): Promise<void> }> {
  const learned = new LearnedIndex({
    source: clickhouseLearnedSource(opts.db),
    logger: opts.logger,
    refreshMs: opts.learnedRefreshMs,
  });
  const sub = opts.subscriber;
  if (sub) {
    sub.on('message', (channel: string, text: string) => {
      if (channel !== SEARCH_CHANNEL) return;
      try {
        for (const m of parseSearchMessage(text)) void learned.changed(m.store_id, m.queries);
      } catch (err) {
        opts.logger.warn({ err: (err as Error).message }, 'learned index: malformed agg:search message');
      }
    });
    // pub/sub has no replay: a resubscription reloads what is loaded
    let first = true;
    sub.on('ready', () => {
      if (!first) learned.reloadAll();
    });
    await sub.subscribe(SEARCH_CHANNEL);
    first = false;
  }
  return {
    learned,
    semantic: opts.semantic ?? new CooccurrenceProvider(),
    state: new SearchState(opts.redis),
    recordFeedback: opts.recordFeedback,
    async close() {
      learned.close();
    },
  };
}
