// The site's pages: server-rendered HTML (no framework), one stylesheet and small scripts under /assets/
// (static/): forms post URL-encoded through fetch and show the result or the problem's message; the 404
// page carries the arcade; /ops draws the operations dashboard from /api/ops/dashboard.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INTEGRATION_CATEGORIES, NEWSLETTER_SOURCES, SPAM_TRAP_FIELD } from '../../schemas/site.ts';
import { ARTICLES, type Article, INTEGRATIONS } from './content.ts';

const STATIC_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'static');
const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

export function loadAssets(): Map<string, Asset> {
  const out = new Map<string, Asset>();
  for (const f of readdirSync(STATIC_DIR)) {
    const body = readFileSync(path.join(STATIC_DIR, f));
    out.set(f, {
      body,
      type: TYPES[path.extname(f)] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    });
  }
  return out;
}

export const esc = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&#39;', '"': '&quot;' })[c] as string);

/** the hidden spam-trap input every form carries */
const trap = `<label class="trap" aria-hidden="true">Company website <input name="${SPAM_TRAP_FIELD}" tabindex="-1" autocomplete="off"></label>`;

function layout(title: string, main: string, opts: { scripts?: string[]; description?: string } = {}): string {
  const scripts = ['site.js', ...(opts.scripts ?? [])]
    .map((s) => `<script src="/assets/${s}" defer></script>`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · Storefront Discovery</title>
<meta name="description" content="${esc(opts.description ?? 'Event-sourced search, autocomplete, browse and recommendations for online stores.')}">
<link rel="stylesheet" href="/assets/site.css">
<link rel="alternate" type="text/plain" href="/llms.txt" title="llms.txt">
<link rel="api-catalog" href="/.well-known/api-catalog">
${scripts}
</head>
<body>
<header class="top"><a class="brand" href="/">Storefront Discovery</a>
<nav><a href="/#articles">Articles</a><a href="/integrations">Integrations</a><a href="/docs">API</a><a href="/ops">Operations</a></nav></header>
<main>${main}</main>
<footer class="bottom">
<p class="counter"><strong data-counter>…</strong></p>
<form data-site-form action="/api/footer-subscribe" method="post" class="inline">
<label>Newsletter <input type="email" name="email" required placeholder="you@example.com" autocomplete="email"></label>
<select name="source" aria-label="List">${NEWSLETTER_SOURCES.map((s) => `<option value="${s}">${s}</option>`).join('')}</select>
${trap}<button type="submit">Subscribe</button>
<output data-result role="status"></output>
</form>
<p class="small"><a href="/llms.txt">llms.txt</a> · <a href="/openapi.json">OpenAPI</a> · <a href="/.well-known/mcp">MCP</a> · <a href="/sitemap.xml">Sitemap</a></p>
</footer>
</body>
</html>`;
}

export function landingPage(counter: { label: string } | null): string {
  const list = ARTICLES.map(
    (a) =>
      `<li><a href="/articles/${a.slug}">${esc(a.title)}</a>${a.gated ? ' <span class="tag">members</span>' : ''}<p>${esc(a.summary)}</p></li>`,
  ).join('');
  return layout(
    'Discovery for online stores',
    `<section class="hero">
<h1>Search that learns from your shoppers</h1>
<p>Search, autocomplete, collection browse and recommendation blocks, computed from an event log you can replay.</p>
<p class="big-counter" data-counter>${esc(counter?.label ?? '…')}</p>
<p><a class="button" href="/docs">Read the API</a> <a class="button ghost" href="/integrations">Integrations</a></p>
</section>
<section class="features">
<div><h2>Event-sourced</h2><p>Every aggregate is rebuilt from the log: replay, compare, swap.</p></div>
<div><h2>Exactly once</h2><p>ClickHouse sinks with insert deduplication tokens, tested under SIGKILL.</p></div>
<div><h2>Fresh</h2><p>Trends reach autocomplete within a second of the searches.</p></div>
</section>
<section id="articles"><h2>Articles</h2><ul class="articles">${list}</ul></section>`,
  );
}

export function articlePage(a: Article, unlocked: boolean): string {
  const paras = (ps: string[]) => ps.map((p) => `<p>${esc(p)}</p>`).join('');
  const gate = unlocked
    ? paras(a.body)
    : `<aside class="gate" id="unlock"><h2>Read the rest</h2><p>Leave your email to unlock this article; we send the occasional newsletter.</p>
<form data-site-form data-unlock action="/api/article-unlock" method="post">
<input type="hidden" name="slug" value="${esc(a.slug)}">
<label>Email <input type="email" name="email" required autocomplete="email"></label>
${trap}<button type="submit">Unlock the article</button>
<output data-result role="status"></output>
</form></aside>`;
  return layout(
    a.title,
    `<article class="article" data-gated="${a.gated}" data-unlocked="${unlocked}">
<h1>${esc(a.title)}</h1><p class="meta">${esc(a.published)}${a.gated ? ' · members' : ''}</p>
${paras(a.lead)}${gate}
</article>`,
    { description: a.summary },
  );
}

export function integrationsPage(): string {
  const rows = INTEGRATIONS.map(
    (i) =>
      `<li><strong>${esc(i.name)}</strong> <span class="tag">${esc(i.category)}</span><p>${esc(i.description)}</p></li>`,
  ).join('');
  const categories = INTEGRATION_CATEGORIES.map((c) => `<option>${esc(c)}</option>`).join('');
  const integrations = INTEGRATIONS.map((i) => `<option value="${i.slug}">${esc(i.name)}</option>`).join('');
  return layout(
    'Integrations',
    `<h1>Integrations</h1><ul class="articles">${rows}</ul>
<div class="two">
<section><h2>Request an integration</h2>
<form data-site-form id="integration-request" action="/api/integration-request" method="post">
<label>Your name <input name="name" required maxlength="120"></label>
<label>Email <input type="email" name="email" required></label>
<label>Service <input name="service_name" required maxlength="120"></label>
<label>Category <select name="category" required>${categories}</select></label>
<label>Store URL <input type="url" name="store_url" maxlength="200" placeholder="https://"></label>
<label>Notes <textarea name="notes" required maxlength="2000" rows="4"></textarea></label>
${trap}<button type="submit">Send the request</button>
<output data-result role="status"></output>
</form></section>
<section><h2>Correct an integration</h2>
<form data-site-form id="integration-correction" action="/api/integration-correction" method="post">
<label>Integration <select name="integration_slug" data-names>${integrations}</select></label>
<input type="hidden" name="integration_name" value="${esc(INTEGRATIONS[0]?.name ?? '')}">
<label>What is wrong <textarea name="details" required maxlength="2000" rows="4"></textarea></label>
<label>Email <input type="email" name="email" required></label>
<label>Your name (optional) <input name="name" maxlength="120"></label>
<label>Page (optional) <input type="url" name="page_url" maxlength="300"></label>
${trap}<button type="submit">Send the correction</button>
<output data-result role="status"></output>
</form></section></div>`,
  );
}

export function docsPage(doc: Record<string, unknown>): string {
  const servers = (doc.servers as { url: string }[] | undefined) ?? [];
  const base = servers[0]?.url ?? '';
  const ops = Object.entries(doc.paths as Record<string, Record<string, { summary?: string; description?: string }>>)
    .flatMap(([p, methods]) =>
      Object.entries(methods).map(
        ([m, op]) =>
          `<li><code>${m.toUpperCase()} ${esc(p)}</code> — <strong>${esc(op.summary ?? '')}</strong><p>${esc(op.description ?? '')}</p></li>`,
      ),
    )
    .join('');
  return layout(
    'API reference',
    `<h1>Storefront Discovery API</h1>
<p>Base URL <code>${esc(base)}</code>. Every request carries <code>X-Storefront-Access-Token</code>. Machine-readable: <a href="/openapi.json">OpenAPI JSON</a>, <a href="/openapi.yaml">YAML</a>.</p>
<ul class="ops">${ops}</ul>`,
  );
}

export function opsPage(): string {
  return layout(
    'Operations',
    `<h1>Operations</h1><p class="small">Live from ClickHouse and this process's metrics; refreshed every 5 s. <span data-updated></span></p>
<div class="grid">
<section class="panel"><h2>Throughput (rows per minute)</h2><svg id="plot-throughput" class="plot" viewBox="0 0 600 200" role="img" aria-label="throughput"></svg></section>
<section class="panel"><h2>Consumer lag (messages)</h2><svg id="plot-lag" class="plot" viewBox="0 0 600 200" role="img" aria-label="consumer lag"></svg></section>
<section class="panel"><h2>DLQ messages by processor</h2><svg id="plot-dlq" class="plot" viewBox="0 0 600 200" role="img" aria-label="dlq"></svg></section>
<section class="panel"><h2>Trending queries (24 h, voters)</h2><svg id="plot-trending" class="plot" viewBox="0 0 600 200" role="img" aria-label="trending"></svg></section>
<section class="panel"><h2>Searches served per day</h2><p class="big-counter" data-ops-counter>…</p><svg id="plot-searches" class="plot" viewBox="0 0 600 200" role="img" aria-label="searches per day"></svg></section>
</div>`,
    { scripts: ['ops.js'] },
  );
}

export function notFoundPage(url: string): string {
  return layout(
    'Not found',
    `<section class="notfound"><h1>404 — nothing at <code>${esc(url.split('?')[0].slice(0, 200))}</code></h1>
<p>While you are here: guide the cart to the products. Arrow keys or WASD; on a phone, swipe or use the pad.</p>
<div class="arcade">
<canvas id="arcade" width="400" height="400" tabindex="0" aria-label="arcade game"></canvas>
<div class="pad" aria-label="controls"><button data-dir="up">▲</button><button data-dir="left">◀</button><button data-dir="down">▼</button><button data-dir="right">▶</button></div>
<p><button id="arcade-start" class="button">Start</button> <span id="arcade-score">Score 0</span></p>
<form id="arcade-submit" hidden>
<label>Your name <input name="player" required maxlength="24" value="guest"></label>
<input type="hidden" name="score" value="0">${trap}
<button type="submit">Post score</button> <output data-result role="status"></output>
</form>
</div>
<section><h2>Leaderboard</h2><ol id="leaderboard" class="leaderboard"></ol></section>
<p><a href="/">Back to the home page</a></p></section>`,
    { scripts: ['arcade.js'] },
  );
}
