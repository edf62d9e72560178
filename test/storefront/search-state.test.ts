// The search contexts feedback records (services/storefront/search/prepared.ts), against a real Redis:
// searches' contexts gather for a few milliseconds and go to Redis in one pipeline; until then the
// process that took the searches reads them from the batch, and afterwards any process reads them from
// Redis, with the 15-minute expiry.
import { describe, expect, it } from 'vitest';
import { PREPARED_SEARCH_TTL_SECONDS } from '../../schemas/storefront.ts';
import { SearchState, type SearchContextRecord } from '../../services/storefront/search/prepared.ts';
import { redisPerFile } from '../helpers/redis.ts';

const client = redisPerFile();

const context = (query: string): SearchContextRecord => ({
  query,
  normalized_query: query.toLowerCase(),
  expanded_queries: [`${query.toLowerCase()}s`],
  intent_modifiers: [],
});

describe('search contexts for feedback', () => {
  it('are readable at once in the process, and from Redis by any process once the batch is written', async () => {
    const redis = client();
    const state = new SearchState(redis, { flushMs: 200 });
    const written = state.remember('st1', ['search-a', 'request-a'], context('Linen'));
    void state.remember('st1', ['request-b'], context('Wool'));
    // before the write: this process has them, Redis not yet
    expect(await redis.exists('sf:sctx:st1:request-a', 'sf:sctx:st1:request-b')).toBe(0);
    expect(await state.context('st1', 'request-a')).toEqual(context('Linen'));
    expect(await state.context('st1', 'request-b')).toEqual(context('Wool'));
    expect(await state.context('st2', 'request-a')).toBeNull();
    // one batch, one settled promise: every key of it is in Redis with the 15-minute expiry
    await written;
    const other = new SearchState(redis);
    expect(await other.context('st1', 'search-a')).toEqual(context('Linen'));
    expect(await other.context('st1', 'request-b')).toEqual(context('Wool'));
    const ttl = await redis.ttl('sf:sctx:st1:request-b');
    expect(ttl).toBeGreaterThan(PREPARED_SEARCH_TTL_SECONDS - 5);
    expect(ttl).toBeLessThanOrEqual(PREPARED_SEARCH_TTL_SECONDS);
  });
});
