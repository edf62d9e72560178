// The cached-answer send path (results/answer.ts) on a real Fastify server: each response is the cached
// envelope with its own request's attributionToken, byte-exact, while many responses of different sizes
// (multi-byte text included) share the reused response buffers concurrently.
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, decodeAnswer, encodeAnswer, sendAnswer } from '../../services/storefront/results/answer.ts';

const envelopes = [
  { results: [], totalResults: 0 },
  { results: Array.from({ length: 400 }, (_, i) => ({ id: i, title: `Käse — ${i} ✓` })), totalResults: 400 },
  // same power-of-two size class as the one above but shorter: a reused buffer must not leak its tail
  { results: Array.from({ length: 300 }, (_, i) => ({ id: i, title: `plain ${i}` })), totalResults: 300 },
  { results: Array.from({ length: 4000 }, (_, i) => ({ id: i, title: `💡 lamp ${i}` })), totalResults: 4000 },
];
const answers: Answer<{ n: number }>[] = envelopes.map((e, n) => decodeAnswer(encodeAnswer({ n }, e)));

const app = Fastify({ genReqId: (req) => `req-${req.headers['x-n']}-ü` });
app.get('/a/:n', (req, reply) => sendAnswer(reply, answers[Number((req.params as { n: string }).n)], req.id));
let base = '';
beforeAll(async () => {
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(() => app.close());

describe('sending a cached answer', () => {
  it('answers each request with the envelope and its own token, byte-exact, under concurrent reuse', async () => {
    for (let round = 0; round < 4; round++) {
      const calls = Array.from({ length: 120 }, async (_, i) => {
        const n = (i * 7 + round) % envelopes.length;
        const res = await fetch(`${base}/a/${n}`, { headers: { 'x-n': `${round}.${i}` } });
        const text = await res.text();
        expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
        expect(JSON.parse(text)).toEqual({ ...envelopes[n], attributionToken: `req-${round}.${i}-ü` });
      });
      await Promise.all(calls);
    }
  });
});
