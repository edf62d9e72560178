// The site's API and pages in the real app, end to end: the counter from ClickHouse, a form stored as an
// event (broker → site processor → site_events_raw), an arcade score reaching the leaderboard, the gated
// article unlocked by the form's cookie, the not-found page (HTML with the arcade for browsers, an RFC 9457
// body otherwise) and the dashboard's live data.
import { describe, expect, it, vi } from 'vitest';
import { ARTICLES } from '../../services/site/content.ts';
import { inBillions } from '../../services/site/counter.ts';
import { sql, stack } from '../helpers/stack.ts';

const json = (r: Response): Promise<any> => r.json();
let ipSeq = 0;
const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${stack().httpUrl}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': `10.77.${process.pid % 250}.${++ipSeq}`,
      ...headers,
    },
    body: new URLSearchParams(fields),
  });

describe('searches-served counter', () => {
  it('answers {count, label} from searches_served_daily, cached with a max-age up to the hourly refresh', async () => {
    const r = await fetch(`${stack().httpUrl}/api/searches-served`);
    expect(r.status).toBe(200);
    expect(Number(/max-age=(\d+)/.exec(r.headers.get('cache-control') ?? '')?.[1])).toBeLessThanOrEqual(3600);
    const body = await json(r);
    expect(Object.keys(body).sort()).toEqual(['count', 'label']);
    expect(body.count).toMatch(/^\d+(\.\d{1,9})?$/);
    expect(body.label).toMatch(/searche?s? served$/);
    // the cached figure is the total at the last refresh: never above the live one
    const [live] = await sql<{ n: string }>('SELECT toString(sum(searches)) AS n FROM searches_served_daily');
    expect(Number(body.count)).toBeLessThanOrEqual(Number(inBillions(live.n)));
    expect((await fetch(`${stack().httpUrl}/api/searches-served`, { method: 'POST' })).status).toBe(405);
  });
});

describe('forms and the arcade, through the log into ClickHouse', () => {
  it('an integration request is stored as a site event and lands in site_events_raw', async () => {
    const r = await form('/api/integration-request', {
      name: 'Ana',
      email: 'ana@example.com',
      service_name: 'Gorgias',
      category: 'Other',
      store_url: 'https://shop.example',
      notes: 'Helpdesk macros.',
      company_website: '',
    });
    expect(r.status).toBe(200);
    const { id } = await json(r);
    await vi.waitFor(
      async () => {
        const rows = await sql<{ kind: string; email: string; fields_json: string }>(
          'SELECT kind, email, fields_json FROM site_events_raw WHERE event_id = {id:String}',
          { id },
        );
        expect(rows).toHaveLength(1);
        expect(rows[0]).toMatchObject({ kind: 'integration_request', email: 'ana@example.com' });
        expect(JSON.parse(rows[0].fields_json)).toMatchObject({
          service_name: 'Gorgias',
          store_url: 'https://shop.example',
        });
      },
      { timeout: 20_000, interval: 250 },
    );
  });

  it('an arcade score reaches the leaderboard read from ClickHouse', async () => {
    const player = `p${process.pid % 100000}`;
    const r = await form('/api/arcade/scores', { player, score: '4321' });
    expect(r.status).toBe(200);
    expect((await form('/api/arcade/scores', { player, score: 'lots' })).status).toBe(400);
    await vi.waitFor(
      async () => {
        const board = await json(await fetch(`${stack().httpUrl}/api/arcade/leaderboard`));
        expect(board.entries).toContainEqual({ player, best: 4321, games: 1 });
      },
      { timeout: 20_000, interval: 250 },
    );
  });
});

describe('pages', () => {
  it('a gated article shows its lead until the unlock form’s cookie comes back', async () => {
    const gated = ARTICLES.find((a) => a.gated) as (typeof ARTICLES)[number];
    const url = `${stack().httpUrl}/articles/${gated.slug}`;
    const locked = await (await fetch(url)).text();
    expect(locked).toContain(gated.lead[0].slice(0, 40));
    expect(locked).not.toContain(gated.body[0].slice(0, 40));
    expect(locked).toContain('action="/api/article-unlock"');
    const r = await form('/api/article-unlock', { email: 'reader@example.com', slug: gated.slug });
    expect(r.status).toBe(200);
    const body = await json(r);
    expect(body.articleUrl).toBe(url);
    expect(body.emailSent).toBe(false);
    const cookie = (r.headers.get('set-cookie') ?? '').split(';')[0];
    const unlocked = await (await fetch(url, { headers: { cookie } })).text();
    expect(unlocked).toContain(gated.body[0].slice(0, 40));
    const forged = await (await fetch(url, { headers: { cookie: `${cookie.split('=')[0]}=forged` } })).text();
    expect(forged).not.toContain(gated.body[0].slice(0, 40));
  });

  it('an unknown path is the arcade page for browsers and an RFC 9457 404 otherwise', async () => {
    const page = await fetch(`${stack().httpUrl}/no/such/page`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('<canvas id="arcade"');
    expect(html).toContain('/assets/arcade.js');
    const api = await fetch(`${stack().httpUrl}/no/such/page`);
    expect(api.status).toBe(404);
    expect(await json(api)).toMatchObject({ status: 404, title: 'Not Found', error: { code: 'not_found' } });
    for (const asset of ['site.css', 'site.js', 'arcade.js', 'ops.js'])
      expect((await fetch(`${stack().httpUrl}/assets/${asset}`)).status, asset).toBe(200);
  });

  it('the dashboard data has throughput, lag and DLQ samples, trending queries and the counter', async () => {
    // the lag gauges are sampled every 5 s from the processors' metrics
    const d = await vi.waitFor(
      async () => {
        const d = await json(await fetch(`${stack().httpUrl}/api/ops/dashboard`));
        expect(Object.keys(d.samples.at(-1).lag)).toContain('site');
        return d;
      },
      { timeout: 30_000, interval: 1_000 },
    );
    expect(d.throughput).toEqual({ events: expect.any(Array), requests: expect.any(Array) });
    expect(d.samples.at(-1)).toEqual({ t: expect.any(Number), lag: expect.any(Object), dlq: expect.any(Object) });
    expect(d.trending).toEqual(expect.any(Array));
    expect(d.counter.count).toMatch(/^\d/);
  });
});

describe('methods', () => {
  it('the read endpoints, the pages and the assets answer GET and HEAD only: others are 405 with Allow', async () => {
    const paths = [
      '/api/searches-served',
      '/api/arcade/leaderboard',
      '/api/ops/dashboard',
      '/',
      `/articles/${ARTICLES[0].slug}`,
      '/integrations',
      '/docs',
      '/ops',
      '/assets/arcade.js',
    ];
    for (const path of paths) {
      expect((await fetch(`${stack().httpUrl}${path}`, { method: 'HEAD' })).status, `HEAD ${path}`).toBe(200);
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        const r = await fetch(`${stack().httpUrl}${path}`, { method });
        expect(r.status, `${method} ${path}`).toBe(405);
        expect(r.headers.get('allow'), `${method} ${path}`).toBe('GET, HEAD');
        expect(await json(r)).toMatchObject({ status: 405, instance: path, error: { code: 'method_not_allowed' } });
      }
    }
  });
});
