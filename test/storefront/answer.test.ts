// The cached-answer send path (results/answer.ts) on a real Fastify server: each response is the cached
// envelope with its own request's attributionToken, byte-exact, while many responses of different sizes
// (multi-byte text included) share the reused response buffers concurrently; gzipped for clients that
// accept it, decoding (by zlib, and by fetch as a browser would) to the same bytes as the plain answer.
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
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
const answers: Answer<{ n: number }>[] = envelopes.map((e, n) => decodeAnswer(Buffer.from(encodeAnswer({ n }, e))));

const app = Fastify({ genReqId: (req) => `req-${req.headers['x-n']}-ü` });
app.get('/a/:n', (req, reply) => sendAnswer(req, reply, answers[Number((req.params as { n: string }).n)], req.id));
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
        const res = await fetch(`${base}/a/${n}`, {
          headers: { 'x-n': `${round}.${i}`, 'accept-encoding': 'identity' },
        });
        const text = await res.text();
        expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
        expect(JSON.parse(text)).toEqual({ ...envelopes[n], attributionToken: `req-${round}.${i}-ü` });
      });
      await Promise.all(calls);
    }
  });
});

/** the raw response: status, headers and the body's bytes as sent (no decoding) */
function rawGet(
  path: string,
  headers: Record<string, string>,
): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}${path}`, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

describe('sending a cached answer gzipped', () => {
  it('sends one gzip member that decodes to the plain answer, byte for byte, for each request', async () => {
    for (let round = 0; round < 3; round++) {
      const calls = Array.from({ length: 60 }, async (_, i) => {
        const n = (i * 5 + round) % envelopes.length;
        const id = `${round}.${i}`;
        const [gz, plain] = await Promise.all([
          rawGet(`/a/${n}`, { 'x-n': id, 'accept-encoding': 'br;q=1, gzip;q=0.8' }),
          rawGet(`/a/${n}`, { 'x-n': id, 'accept-encoding': 'identity' }),
        ]);
        expect(gz.headers['content-encoding']).toBe('gzip');
        expect(plain.headers['content-encoding']).toBeUndefined();
        for (const r of [gz, plain]) expect(r.headers.vary).toBe('accept-encoding');
        expect(Number(gz.headers['content-length'])).toBe(gz.body.length);
        expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
        expect(JSON.parse(plain.body.toString('utf8'))).toEqual({ ...envelopes[n], attributionToken: `req-${id}-ü` });
        if (n > 0) expect(gz.body.length).toBeLessThan(plain.body.length / 3);
      });
      await Promise.all(calls);
    }
  });

  it('decodes in fetch as in a browser; gzip refused or not offered gives the plain answer', async () => {
    const res = await fetch(`${base}/a/3`, { headers: { 'x-n': 'f', 'accept-encoding': 'gzip, deflate' } });
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(await res.json()).toEqual({ ...envelopes[3], attributionToken: 'req-f-ü' });
    for (const accept of [undefined, 'gzip;q=0', 'br', 'identity']) {
      const r = await rawGet('/a/1', { 'x-n': 'p', ...(accept ? { 'accept-encoding': accept } : {}) });
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(r.body.toString('utf8')).attributionToken).toBe('req-p-ü');
    }
  });
});
