// The `agg:trending` message contract (schemas/channels.ts): what the publisher may send and what the
// subscriber accepts are the same zod schema.
import { describe, expect, it } from 'vitest';
import {
  encodeTrendingMessages,
  parseTrendingMessage,
  TRENDING_CHANNEL,
  TRENDING_MESSAGE_MAX_CELLS,
  type TrendingCell,
} from '../../schemas/channels.ts';

const cell: TrendingCell = {
  store_id: 'demo',
  country: 'US',
  query: 'snow boots',
  bucket: '2026-11-22T02:00:00.000Z',
  votes: 4,
};

describe('agg:trending', () => {
  it('is the channel name both sides use', () => {
    expect(TRENDING_CHANNEL).toBe('agg:trending');
  });

  it('round-trips cells, split into messages of at most the maximum', () => {
    const cells = Array.from({ length: TRENDING_MESSAGE_MAX_CELLS + 1 }, (_, i) => ({ ...cell, query: `q${i}` }));
    const messages = encodeTrendingMessages(cells);
    expect(messages).toHaveLength(2);
    expect(messages.flatMap((m) => parseTrendingMessage(m))).toEqual(cells);
    expect(parseTrendingMessage(encodeTrendingMessages([{ ...cell, country: '' }])[0])).toEqual([
      { ...cell, country: '' },
    ]);
  });

  it('refuses malformed cells on both sides, the country included', () => {
    const bad: [string, unknown][] = [
      ['country not a code', { ...cell, country: 'usa' }],
      ['country missing', { ...cell, country: undefined }],
      ['lower-case country', { ...cell, country: 'us' }],
      ['empty query', { ...cell, query: '' }],
      ['bucket not an hour', { ...cell, bucket: '2026-11-22T02:30:00.000Z' }],
      ['bucket not ISO', { ...cell, bucket: '2026-11-22 02:00:00' }],
      ['votes not an integer', { ...cell, votes: 1.5 }],
      ['votes as a string', { ...cell, votes: '4' }],
      ['bad store id', { ...cell, store_id: 'a b' }],
    ];
    for (const [what, c] of bad) {
      expect(() => parseTrendingMessage(JSON.stringify([c])), what).toThrow();
      expect(() => encodeTrendingMessages([c as TrendingCell]), what).toThrow();
    }
    expect(() => parseTrendingMessage('{"not":"an array"}')).toThrow();
    expect(() => parseTrendingMessage('not json')).toThrow();
  });
});
