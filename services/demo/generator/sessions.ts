// The demo store's simulated shopper sessions, built lazily, each from its own random stream: what the
// plan says a session does (compare a cluster, search a planted query, join the burst, buy a bundle, or
// browse), as steps the loader turns into beacon events and orders.
import { SHOPPER_IPS, USER_AGENTS } from './vocab.ts';
import {
  type SimStep,
  type OrderLine,
  type SimSession,
  type DemoStore,
  ORDER_ID_BASE,
  productIdOf,
  productIndexOf,
  variantIdOf,
  money,
  slug,
} from './model.ts';
import type { DemoBase } from './base.ts';
import type { DemoPlan } from './plan.ts';

export function sessionBuilder(
  base: DemoBase,
  plan: DemoPlan,
  collections: DemoStore['collections'],
  articles: DemoStore['articles'],
): (i: number) => SimSession {
  const { root, metas } = base;
  const {
    planned,
    sessionCount,
    startOf,
    byPop,
    burstQuery,
    burstMembers,
    clusters,
    queries,
    bundles,
    learnedQueries,
  } = plan;
  const visibleCollections = collections.filter((c) => c.product_ids.length > 0);

  const session = (i: number): SimSession => {
    if (!Number.isInteger(i) || i < 0 || i >= sessionCount) throw new RangeError(`session ${i} out of range`);
    const p = planned[i];
    const rng = root.fork(`session:${i}`);
    const market: 'us' | 'eu' = rng.chance(0.7) ? 'us' : 'eu';
    const s: SimSession = {
      index: i,
      kind: p.kind,
      sessionId: `demo-s-${rng.uuid()}`,
      deviceId: `demo-d-${rng.uuid()}`,
      customerId: rng.chance(0.2) ? String(7_100_000_000 + rng.int(1, 5000)) : null,
      market,
      ip: rng.pick(SHOPPER_IPS[market]),
      userAgent: rng.pick(USER_AGENTS),
      start: startOf(i),
      steps: [],
    };
    let t = s.start;
    const step = <T extends Omit<SimStep, 't' | 'eventId'>>(x: T) => {
      t += Math.round(4_000 + rng.exp(20_000));
      s.steps.push({ ...x, t, eventId: rng.uuid() } as unknown as SimStep);
    };
    const firstVariant = (pi: number) => variantIdOf(pi, 0);
    const view = (pi: number) =>
      step({ type: 'product_view', productId: productIdOf(pi), variantId: firstVariant(pi) });
    const noiseView = () => view(byPop[rng.zipf(byPop.length, 1.05)]);
    const searchFor = (query: string) => {
      if (rng.chance(0.4)) {
        const typed = query.slice(0, Math.min(query.length, rng.int(2, 4)));
        step({ type: 'autocomplete', typed });
        step({ type: 'autocomplete_click', typed, query, position: 1 });
        step({ type: 'search', query, source: 'autocomplete' });
      } else {
        step({ type: 'search', query, source: 'typed' });
      }
    };
    switch (p.kind) {
      case 'cluster': {
        const members = rng.shuffle(clusters[p.ref].productIds.map(productIndexOf));
        if (rng.chance(0.5)) step({ type: 'collection_view', handle: slug(metas[members[0]].type.plural) });
        for (const pi of members) view(pi);
        for (let k = rng.int(0, 2); k > 0; k--) noiseView();
        break;
      }
      case 'search': {
        const q = queries[p.ref];
        searchFor(q.query);
        const clicks = rng.weighted([1, 2, 3], [5, 3, 2]);
        const picks = new Set<string>();
        for (let k = 0; k < clicks; k++)
          picks.add(q.engaged[Math.min(q.engaged.length - 1, rng.zipf(q.engaged.length, 1.2))]);
        let addedToCart = false;
        for (const id of picks) {
          step({ type: 'product_click', productId: id, position: rng.int(1, 8), query: q.query });
          step({ type: 'product_view', productId: id, variantId: firstVariant(productIndexOf(id)) });
          if (!addedToCart && rng.chance(0.2)) {
            addedToCart = true;
            const m = metas[productIndexOf(id)];
            step({
              type: 'add_to_cart',
              productId: id,
              variantId: firstVariant(m.index),
              price: money(m.price),
              quantity: 1,
            });
          }
        }
        break;
      }
      case 'learned': {
        // a phrase no product text matches: the shopper browses the results of later queries, views the
        // preferred products and often carts one
        const q = learnedQueries[p.ref];
        searchFor(q.query);
        // the sessions take turns on the less preferred products, so every engaged product is chosen
        const picks = new Set<string>([q.engaged[(p.ord ?? 0) % q.engaged.length]]);
        for (let k = rng.weighted([0, 1, 2], [4, 4, 2]); k > 0; k--)
          picks.add(q.engaged[Math.min(q.engaged.length - 1, rng.zipf(q.engaged.length, 1.2))]);
        let carted = false;
        for (const id of picks) {
          step({ type: 'product_view', productId: id, variantId: firstVariant(productIndexOf(id)) });
          if (!carted && rng.chance(0.5)) {
            carted = true;
            const m = metas[productIndexOf(id)];
            step({
              type: 'add_to_cart',
              productId: id,
              variantId: firstVariant(m.index),
              price: money(m.price),
              quantity: 1,
            });
          }
        }
        break;
      }
      case 'trending': {
        searchFor(burstQuery);
        if (rng.chance(0.7)) {
          const pi = rng.pick(burstMembers);
          step({ type: 'product_click', productId: productIdOf(pi), position: rng.int(1, 4), query: burstQuery });
          view(pi);
        }
        break;
      }
      case 'bundle': {
        const b = bundles[p.ref];
        const lines: OrderLine[] = [];
        for (const id of b.productIds) {
          const pi = productIndexOf(id);
          const v = firstVariant(pi);
          const price = money(metas[pi].price);
          view(pi);
          step({ type: 'add_to_cart', productId: id, variantId: v, price, quantity: 1 });
          lines.push({ productId: id, variantId: v, quantity: 1, price });
        }
        const total = money(lines.reduce((sum, l) => sum + Number(l.price) * l.quantity, 0));
        step({ type: 'purchase', orderId: String(ORDER_ID_BASE + i + 1), lines, total });
        break;
      }
      case 'browse': {
        if (rng.chance(0.4)) step({ type: 'collection_view', handle: rng.pick(visibleCollections).handle });
        if (rng.chance(0.08)) {
          const a = rng.pick(articles);
          step({ type: 'content_view', contentType: 'article', contentId: a.id, handle: a.handle });
        }
        for (let k = rng.weighted([1, 2, 3, 4], [4, 3, 2, 1]); k > 0; k--) noiseView();
        break;
      }
    }
    return s;
  };
  return session;
}
