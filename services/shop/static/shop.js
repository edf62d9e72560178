// The demo shop's one script: a small router over /shop paths (each a full page load), rendering with the
// storefront SDK only (served by the app at /sdk/v1/storefront-sdk.js). Test hooks: `data-*` attributes,
// `document.body.dataset.ready` once a page has drawn, and `window.shop` (client, tracker, metrics).
import { createClient, createTracker } from '/sdk/v1/storefront-sdk.js';

const cfg = JSON.parse(document.getElementById('shop-config').textContent);
const main = document.getElementById('main');
/** suggest: input event → suggestions drawn (ms); painted: when each was drawn (performance.now()) */
const metrics = { suggest: [], painted: [] };
window.shop = { metrics };

const ATTRS = [
  'id',
  'title',
  'handle',
  'vendor',
  'product_type',
  'price_range',
  'featured_media',
  'available',
  'variants',
];
const FACETS = ['vendor', 'product_type', 'options.*'];

const h = (s) =>
  String(s ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );
const money = (p) => (p?.price_range?.from ? `$${p.price_range.from}` : '');
const done = () => {
  document.body.dataset.ready = '1';
};

const cart = {
  items: () => JSON.parse(localStorage.getItem('shop:cart') ?? '[]'),
  save(items) {
    localStorage.setItem('shop:cart', JSON.stringify(items));
    document.querySelector('[data-cart-count]').textContent = String(items.reduce((n, i) => n + i.quantity, 0));
  },
};

if (cfg) {
  const tracker = createTracker({ token: cfg.token, baseUrl: cfg.baseUrl });
  const client = createClient({
    token: cfg.token,
    baseUrl: cfg.baseUrl,
    tracker,
    attributes: ATTRS,
    context: () => ({
      productsInCart: cart.items().map((i) => ({ productId: i.productId, price: i.price, quantity: i.quantity })),
      freeShippingThreshold: cfg.freeShippingThreshold,
    }),
  });
  Object.assign(window.shop, { client, tracker });
  cart.save(cart.items());
  autocomplete(client, tracker);
  route(client, tracker).catch((err) => {
    main.innerHTML = `<p class="error">${h(err.message)}</p>`;
    done();
  });
}

// ------------------------------------------------------------------------------------------- products

/** a product tile; clicking it sends product_click (with the attribution token) before navigating */
function tile(p, position, extra = '') {
  const img = p.featured_media?.src ?? p.images?.[0]?.src;
  const id = p.product_id ?? p.id;
  return `<a class="product" href="/shop/products/${id}" data-product-id="${id}" data-position="${position}"${extra}>
    ${img ? `<img src="${h(img)}" alt="" loading="lazy" width="180" height="180">` : '<span class="noimg"></span>'}
    <span class="title">${h(p.title)}</span><span class="price">${money(p)}</span></a>`;
}

function remember(results) {
  for (const p of results) sessionStorage.setItem(`shop:p:${p.product_id ?? p.id}`, JSON.stringify(p));
}

/** clicks on tiles inside `root`: product_click with position, block and query */
function trackClicks(root, tracker, fields = {}) {
  root.addEventListener('click', (e) => {
    const a = e.target.closest('a.product');
    if (!a) return;
    const block = a.closest('[data-block-id]')?.dataset.blockId;
    tracker.productClick(Number(a.dataset.productId), Number(a.dataset.position), {
      ...fields,
      ...(block ? { block_id: block } : {}),
    });
  });
}

// ---------------------------------------------------------------------------------------- autocomplete

function autocomplete(client, tracker) {
  const form = document.getElementById('search');
  const input = form.q;
  const list = document.getElementById('suggestions');
  input.value = new URLSearchParams(location.search).get('q') ?? '';
  let pending;
  let prepareTimer;
  input.addEventListener('input', async () => {
    const typed = input.value;
    const t0 = performance.now();
    pending?.abort();
    pending = new AbortController();
    const r = await client.autocomplete(typed, { limit: 8, signal: pending.signal });
    if (!r.data || input.value !== typed) return;
    list.innerHTML = r.data.matchedQueries
      .map((q, i) => `<li role="option" data-position="${i + 1}" data-query="${h(q)}">${h(q)}</li>`)
      .join('');
    list.hidden = r.data.matchedQueries.length === 0;
    if (typed)
      requestAnimationFrame(() => {
        const at = performance.now();
        metrics.suggest.push(at - t0);
        metrics.painted.push(at);
      });
    // prepare the likely search while the shopper types: execute on submit uses it
    clearTimeout(prepareTimer);
    if (typed.trim().length >= 2)
      prepareTimer = setTimeout(async () => {
        const p = await client.prepareSearch(typed.trim());
        if (p.data) sessionStorage.setItem(`shop:prepared:${typed.trim()}`, p.data.search_id);
      }, 300);
  });
  list.addEventListener('mousedown', (e) => {
    const li = e.target.closest('li');
    if (!li) return;
    e.preventDefault();
    tracker.track('autocomplete_click', {
      query: li.dataset.query,
      contextual_data: { typed_query: input.value, position: Number(li.dataset.position), selection_source: 'query' },
    });
    location.href = `/shop/search?q=${encodeURIComponent(li.dataset.query)}&source=autocomplete`;
  });
  input.addEventListener('blur', () => setTimeout(() => (list.hidden = true), 100));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (input.value.trim()) location.href = `/shop/search?q=${encodeURIComponent(input.value.trim())}`;
  });
}

// --------------------------------------------------------------------------------------------- router

async function route(client, tracker) {
  const parts = location.pathname.replace(/\/+$/, '').split('/').slice(2).map(decodeURIComponent);
  const q = new URLSearchParams(location.search);
  if (parts.length === 0) return home(client, tracker);
  if (parts[0] === 'search') return results(client, tracker, { query: q.get('q') ?? '' });
  if (parts[0] === 'collections' && parts[1]) return results(client, tracker, { handle: parts[1] });
  if (parts[0] === 'products' && parts[1]) return product(client, tracker, Number(parts[1]));
  if (parts[0] === 'cart') return cartPage(client, tracker);
  if (parts[0] === 'content') return contentPage(client, tracker, q.get('q') ?? '');
  main.innerHTML = '<h1>Not found</h1>';
  done();
}

async function blockSection(client, title, id, body) {
  const r = await client.block(id, { pagination: { limit: 8 }, ...body });
  if (!r.data?.results.length) return '';
  remember(r.data.results);
  return `<section class="block" data-block-id="${id}" data-block="${h(title)}"><h2>${h(r.data.block?.title ?? title)}</h2>
    <div class="grid">${r.data.results.map((p, i) => tile(p, i + 1)).join('')}</div></section>`;
}

async function home(client, tracker) {
  const [trending, best] = await Promise.all([
    blockSection(client, 'Trending now', cfg.blocks.trendingNow),
    blockSection(client, 'Best sellers', cfg.blocks.bestSellers),
  ]);
  main.innerHTML = `<h1>Welcome</h1><p class="collections">${cfg.collections
    .map((c) => `<a href="/shop/collections/${c.handle}">${h(c.title)}</a>`)
    .join(' ')}</p>${trending}${best}`;
  trackClicks(main, tracker);
  done();
}

/** the filter group of the page's `f=<property>:<value>` parameters (values of one property OR-ed) */
function filtersOf(params) {
  const byProp = new Map();
  for (const f of params.getAll('f')) {
    const i = f.indexOf(':');
    if (i > 0) byProp.set(f.slice(0, i), [...(byProp.get(f.slice(0, i)) ?? []), f.slice(i + 1)]);
  }
  if (!byProp.size) return undefined;
  return {
    conditional: 'AND',
    expressions: [...byProp].map(([property, values]) => ({ property, operator: 'in', values })),
  };
}

async function results(client, tracker, { query, handle }) {
  const params = new URLSearchParams(location.search);
  const page = Number(params.get('page') ?? 1);
  const body = {
    pagination: { page, limit: 24 },
    facets: FACETS,
    retrieveFacetCount: true,
    ...(params.get('sort') ? { sort_order_code: params.get('sort') } : {}),
    ...(filtersOf(params) ? { filter_group: filtersOf(params) } : {}),
  };
  let r;
  if (query) {
    const prepared = sessionStorage.getItem(`shop:prepared:${query}`);
    if (prepared) sessionStorage.removeItem(`shop:prepared:${query}`);
    r = await client.search(query, prepared ? { ...body, search_id: prepared } : body);
  } else {
    r = await client.browse(handle, body);
  }
  const sorts = await client.sortOrders();
  if (r.error) {
    main.innerHTML = `<h1>${r.status === 404 ? 'Not found' : 'Something went wrong'}</h1><p class="error" data-code="${h(r.error.code)}">${h(r.error.message)}</p>`;
    return done();
  }
  const d = r.data;
  if (query && page === 1)
    tracker.search(query, params.get('source') === 'autocomplete' ? 'autocomplete' : 'typed', d.totalResults);
  if (handle) tracker.track('collection_view', { collection_handle: handle });
  if (d._meta.redirect?.url) {
    main.innerHTML = `<p class="redirect">See <a href="${h(d._meta.redirect.url)}">${h(d._meta.redirect.url)}</a></p>`;
    return done();
  }
  remember(d.results);
  const banners = (d.appliedRules ?? []).flatMap((rule) => rule.banners);
  const hero = banners.filter((b) => b.web_layout.placement === 'hero' && b.web_media);
  const inline = banners.filter((b) => b.web_layout.placement !== 'hero' && b.web_media && b.web_layout.position);
  for (const b of [...hero, ...inline])
    tracker.track('banner_impression', {
      banner_id: b.id,
      rule_id: b.rule_id,
      banner_type: b.banner_type,
      collection_handle: handle ?? null,
    });
  const banner = (b) =>
    `<a class="banner ${h(b.web_layout.placement)}" data-banner-id="${h(b.id)}" href="${h(b.link ?? '#')}"><img src="${h(b.web_media.src)}" alt="${h(b.web_media.alt)}"><span>${h(b.name)}</span></a>`;
  const tiles = d.results.map((p, i) => tile(p, (page - 1) * d.resultsPerPage + i + 1));
  for (const b of inline.sort((a, c) => c.web_layout.position - a.web_layout.position))
    tiles.splice(Math.min(tiles.length, b.web_layout.position - 1), 0, banner(b));
  const link = (patch) => {
    const p = new URLSearchParams(location.search);
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) p.delete(k);
      else p.set(k, v);
    }
    return `?${p}`;
  };
  const active = new Set(params.getAll('f'));
  const facetHtml = Object.entries(d.facets ?? {})
    .filter(([, values]) => Object.keys(values).length > 0)
    .map(
      ([code, values]) =>
        `<fieldset data-facet="${h(code)}"><legend>${h(code.replace(/^options\./, ''))}</legend>${Object.entries(values)
          .slice(0, 12)
          .map(([v, n]) => {
            const key = `${code}:${v}`;
            const p = new URLSearchParams(location.search);
            const all = p.getAll('f');
            p.delete('f');
            p.delete('page');
            for (const f of active.has(key) ? all.filter((x) => x !== key) : [...all, key]) p.append('f', f);
            return `<a class="facet${active.has(key) ? ' on' : ''}" data-value="${h(v)}" href="?${p}">${h(v)} <small>${n}</small></a>`;
          })
          .join('')}</fieldset>`,
    )
    .join('');
  const sortHtml = `<select id="sort" aria-label="Sort">${(sorts.data?.sortOrders ?? [])
    .map(
      (s) =>
        `<option value="${h(s.code)}"${s.code === d._meta.sortOrderCode ? ' selected' : ''}>${h(s.nickname)}</option>`,
    )
    .join('')}</select>`;
  const title = query ? `“${h(query)}”` : h(d._meta.collection?.title ?? handle);
  main.innerHTML = `${hero.map(banner).join('')}<div class="bar"><h1>${title}</h1><span id="total" data-total="${d.totalResults}">${d.totalResults} results</span>${sortHtml}</div>
    <div class="results"><aside id="facets">${facetHtml}</aside><div><div class="grid" id="results">${tiles.join('')}</div>
    <p class="pages">${page > 1 ? `<a href="${link({ page: page - 1 })}">← Previous</a>` : ''} Page ${d.page} of ${d.totalPages} ${page < d.totalPages ? `<a href="${link({ page: page + 1 })}">Next →</a>` : ''}</p></div></div>`;
  document.getElementById('sort').addEventListener('change', (e) => {
    location.href = link({ sort: e.target.value, page: null });
  });
  main.addEventListener('click', (e) => {
    const b = e.target.closest('a.banner');
    if (b) tracker.track('banner_click', { banner_id: b.dataset.bannerId, collection_handle: handle ?? null });
  });
  trackClicks(document.getElementById('results'), tracker, query ? { query } : {});
  done();
}

async function findProduct(client, id) {
  const known = sessionStorage.getItem(`shop:p:${id}`);
  if (known) return JSON.parse(known);
  // no product endpoint: the product is looked up in the category collections
  const filter_group = { conditional: 'AND', expressions: [{ property: 'id', operator: 'eq', values: [id] }] };
  const found = await Promise.all(
    ['apparel', 'footwear', 'accessories', 'home', 'beauty'].map((c) => client.browse(c, { filter_group, facets: [] })),
  );
  return found.find((r) => r.data?.results.length)?.data.results[0];
}

async function product(client, tracker, id) {
  const p = await findProduct(client, id);
  if (!p) {
    main.innerHTML = '<h1>Not found</h1>';
    return done();
  }
  tracker.productView(id);
  const img = p.featured_media?.src ?? p.images?.[0]?.src;
  const anchor = { anchor_id: String(id) };
  const [also, together, similar] = await Promise.all([
    blockSection(client, 'Customers also viewed', cfg.blocks.alsoViewed, anchor),
    blockSection(client, 'Frequently bought together', cfg.blocks.boughtTogether, anchor),
    client.similarProducts(id, { pagination: { limit: 8 } }),
  ]);
  let similarHtml = '';
  if (similar.data?.results.length) {
    remember(similar.data.results);
    similarHtml = `<section class="block" data-block-id="similar"><h2>Similar products</h2><div class="grid">${similar.data.results
      .map((s, i) => tile(s, i + 1))
      .join('')}</div></section>`;
  }
  const variant = p.variants?.find((v) => v.available) ?? p.variants?.[0];
  main.innerHTML = `<article class="pdp" data-product-id="${id}">${img ? `<img src="${h(img)}" alt="" width="360" height="360">` : ''}
    <div><h1>${h(p.title)}</h1><p>${h(p.vendor)} · ${h(p.product_type)}</p><p class="price">${money(p)}</p>
    <button id="add-to-cart" ${p.available === false ? 'disabled' : ''}>Add to cart</button></div></article>${also}${together}${similarHtml}`;
  document.getElementById('add-to-cart').addEventListener('click', () => {
    const items = cart.items();
    const price = Number(variant?.price ?? p.price_range?.from ?? 0);
    const line = items.find((i) => i.productId === id);
    if (line) line.quantity++;
    else items.push({ productId: id, variantId: variant?.id, title: p.title, price, quantity: 1 });
    cart.save(items);
    tracker.track('add_to_cart', {
      product_id: id,
      variant_id: variant?.id ?? null,
      quantity: 1,
      price: price.toFixed(2),
    });
  });
  trackClicks(main, tracker);
  done();
}

async function cartPage(client, tracker) {
  const items = cart.items();
  const total = items.reduce((s, i) => s + i.price * i.quantity, 0);
  const gap = Math.max(0, cfg.freeShippingThreshold - total);
  // the demo's free_shipping_picks block (cart anchor): the API reads the cart and the threshold from the
  // client's context (productsInCart, freeShippingThreshold) and answers products that close the gap
  const picks =
    items.length && gap > 0
      ? await blockSection(client, 'Add one for free shipping', cfg.blocks.freeShippingPicks)
      : '';
  main.innerHTML = `<h1>Cart</h1>${
    items.length
      ? `<ul class="cart">${items.map((i) => `<li data-product-id="${i.productId}">${h(i.title)} × ${i.quantity} <span>$${(i.price * i.quantity).toFixed(2)}</span></li>`).join('')}</ul>
      <p class="total" data-gap="${gap.toFixed(2)}">Total $${total.toFixed(2)} · ${gap > 0 ? `$${gap.toFixed(2)} more for free shipping` : 'Free shipping'}</p>`
      : '<p>Your cart is empty.</p>'
  }${picks}`;
  trackClicks(main, tracker);
  done();
}

async function contentPage(client, tracker, query) {
  let list = '';
  if (query) {
    const r = await client.searchContent(query, { pagination: { limit: 12 } });
    list = r.data
      ? `<ol class="content" id="content-results">${r.data.results
          .map(
            (c, i) =>
              `<li data-content-id="${c.content_id}" data-position="${i + 1}"><strong>${h(c.title)}</strong> <small>${h(c.content_type)}</small><p>${h(c.summary_text.slice(0, 200))}</p></li>`,
          )
          .join('')}</ol>`
      : `<p class="error">${h(r.error.message)}</p>`;
    main.addEventListener('click', (e) => {
      const li = e.target.closest('li[data-content-id]');
      const c = li && r.data.results[Number(li.dataset.position) - 1];
      if (c)
        tracker.track('content_click', {
          content_type: c.content_type,
          content_id: c.content_id,
          position: Number(li.dataset.position),
        });
    });
  }
  main.innerHTML = `<h1>Journal</h1><form action="/shop/content"><input name="q" value="${h(query)}" placeholder="Search articles and pages"> <button>Search</button></form>${list}`;
  done();
}
