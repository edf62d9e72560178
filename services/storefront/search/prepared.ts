// Short-lived search state in Redis, scoped by store: prepared searches and the search context that
// feedback records.
//
//   sf:prep:{store}:{search_id}  prepare's record: `pending` from the 202 until the background work
//                                finishes, then `ready` with the query plan; 15 minutes from prepare.
//   sf:sctx:{store}:{id}         what a search did (query, expansions, intent-modifier actions), under
//                                the prepared search_id and under the execute's request id
//                                (attributionToken); 15 minutes. Feedback within that window stores it.
//
// A `pending` record older than PENDING_STALE_MS is treated as lost (the instance that took the prepare
// went away): execute then processes normally instead of answering 425 until the record expires.
import type { Redis } from 'ioredis';
import { PREPARED_SEARCH_TTL_SECONDS } from '../../../schemas/storefront.ts';
import type { IntentAction, QueryPlan } from './understand.ts';

export const PENDING_STALE_MS = 10_000;

export type PreparedRecord =
  | { state: 'pending'; query: string; startedAt: number }
  | { state: 'ready'; query: string; startedAt: number; plan: QueryPlan };

export interface SearchContextRecord {
  query: string;
  normalized_query: string;
  expanded_queries: string[];
  intent_modifiers: IntentAction[];
}

const prepKey = (store: string, id: string) => `sf:prep:${store}:${id}`;
const ctxKey = (store: string, id: string) => `sf:sctx:${store}:${id}`;

export function contextOf(plan: QueryPlan, ruleExpansions: readonly string[] = []): SearchContextRecord {
  return {
    query: plan.query,
    normalized_query: plan.normalized,
    expanded_queries: [
      ...new Set([...(plan.text !== plan.normalized ? [plan.text] : []), ...plan.expansions, ...ruleExpansions]),
    ],
    intent_modifiers: plan.intents,
  };
}

/** how long search contexts gather before they go to Redis together (SearchState.remember) */
export const REMEMBER_FLUSH_MS = 5;

export class SearchState {
  private readonly redis: Redis;
  private readonly flushMs: number;
  constructor(redis: Redis, opts: { flushMs?: number } = {}) {
    this.redis = redis;
    this.flushMs = opts.flushMs ?? REMEMBER_FLUSH_MS;
  }

  async start(store: string, id: string, query: string): Promise<void> {
    const rec: PreparedRecord = { state: 'pending', query, startedAt: Date.now() };
    await this.redis.set(prepKey(store, id), JSON.stringify(rec), 'EX', PREPARED_SEARCH_TTL_SECONDS);
  }

  /** the plan is ready: the record and the feedback context, within the 15 minutes from prepare */
  async complete(store: string, id: string, plan: QueryPlan, startedAt: number): Promise<void> {
    const rec: PreparedRecord = { state: 'ready', query: plan.query, startedAt, plan };
    const ttl = Math.max(1, PREPARED_SEARCH_TTL_SECONDS - Math.floor((Date.now() - startedAt) / 1000));
    await this.redis
      .multi()
      .set(prepKey(store, id), JSON.stringify(rec), 'EX', ttl)
      .set(ctxKey(store, id), JSON.stringify(contextOf(plan)), 'EX', ttl)
      .exec();
  }

  /** prepare's background work failed: drop the record, so execute processes normally */
  async abandon(store: string, id: string): Promise<void> {
    await this.redis.del(prepKey(store, id));
  }

  async get(store: string, id: string): Promise<PreparedRecord | null> {
    const v = await this.redis.get(prepKey(store, id));
    if (!v) return null;
    const rec = JSON.parse(v) as PreparedRecord;
    if (rec.state === 'pending' && Date.now() - rec.startedAt > PENDING_STALE_MS) return null;
    return rec;
  }

  /**
   * Record what a search did under its ids (fire and forget on the request path). The records of `flushMs`
   * go to Redis in one pipeline: one socket write for many searches. A MULTI per search cost the search HIT
   * path a fifth of its time on a loaded 2-core host; a pipeline per turn of the event loop (a handful of
   * searches each under load) still put that write at 7 % of the main thread. Until the batch is written,
   * `context()` in this process reads it from the batch, and the promise settles with the batch.
   */
  remember(store: string, ids: readonly string[], context: SearchContextRecord): Promise<void> {
    let text = this.texts.get(context);
    if (text === undefined) {
      text = JSON.stringify(context);
      this.texts.set(context, text);
    }
    for (const id of ids) this.batch.set(ctxKey(store, id), text);
    this.flushed ??= new Promise<void>((resolve, reject) =>
      setTimeout(() => {
        const batch = this.batch;
        this.batch = new Map();
        this.flushed = null;
        const pipeline = this.redis.pipeline();
        for (const [key, value] of batch) pipeline.set(key, value, 'EX', PREPARED_SEARCH_TTL_SECONDS);
        pipeline.exec().then((results) => {
          const failed = results?.find(([err]) => err);
          if (failed) reject(failed[0]);
          else resolve();
        }, reject);
      }, this.flushMs),
    );
    return this.flushed;
  }
  /** key → context text, not written yet */
  private batch = new Map<string, string>();
  private flushed: Promise<void> | null = null;
  /** a cached answer's context serialized once (the decoded answer is shared by its HITs) */
  private readonly texts = new WeakMap<SearchContextRecord, string>();

  async context(store: string, id: string): Promise<SearchContextRecord | null> {
    const key = ctxKey(store, id);
    const v = this.batch.get(key) ?? (await this.redis.get(key));
    return v ? (JSON.parse(v) as SearchContextRecord) : null;
  }
}

/** `X-SDK-Client: name/1.2.3` → whether the version is 1.0.0 or higher (the 425 polling behaviour) */
export function sdkPolls(header: string | undefined | null): boolean {
  if (!header) return false;
  const m = header.trim().match(/\/v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/);
  return m ? Number(m[1]) >= 1 : false;
}
