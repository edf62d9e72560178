// The demo store's collections: one per product type, one per category, and the merchandised ones.
import { PRODUCT_TYPES } from './vocab.ts';
import { IMAGE_SIZE, type DemoStore, COLLECTION_ID_BASE, productIdOf, DAY, slug } from './model.ts';
import type { DemoBase } from './base.ts';

export function demoCollections(base: DemoBase): DemoStore['collections'] {
  const { o, rankOf, metas, imageUrl, visible, visibleByType } = base;
  // --- collections -------------------------------------------------------------------------------
  const byPopularity = (ids: number[]) => ids.sort((a, b) => rankOf[a] - rankOf[b]);
  const collections: DemoStore['collections'] = [];
  const addCollection = (
    title: string,
    members: number[],
    body: string,
    sortOrder: string,
    defaultSort: string | null,
    image?: string,
  ) => {
    const id = String(COLLECTION_ID_BASE + collections.length + 1);
    collections.push({
      id,
      handle: slug(title),
      title,
      body_html: `<p>${body}</p>`,
      collection_type: 'custom',
      sort_order: sortOrder,
      published: true,
      published_at: new Date(o.anchorMs - 800 * DAY).toISOString(),
      updated_at: new Date(o.anchorMs).toISOString(),
      image: image ? { src: image, alt: title, width: IMAGE_SIZE, height: IMAGE_SIZE } : null,
      metafields: defaultSort
        ? [{ namespace: 'service', key: 'default_sort_order', value: defaultSort, type: 'single_line_text_field' }]
        : [],
      product_ids: members.map(productIdOf),
    });
  };
  for (const t of PRODUCT_TYPES) {
    const members = byPopularity([...(visibleByType.get(t) ?? [])]);
    if (members.length)
      addCollection(
        t.plural,
        members,
        `All ${t.plural.toLowerCase()}, most popular first.`,
        'manual',
        'best_selling',
        imageUrl(t.slug, 'beige', 0),
      );
  }
  for (const cat of ['Apparel', 'Footwear', 'Accessories', 'Home', 'Beauty'] as const) {
    addCollection(
      cat,
      byPopularity(visible.filter((i) => metas[i].type.category === cat)),
      `Everything in ${cat.toLowerCase()}.`,
      'best-selling',
      'best_selling',
    );
  }
  addCollection(
    'New Arrivals',
    [...visible].sort((a, b) => metas[b].createdMs - metas[a].createdMs).slice(0, 120),
    'The newest additions.',
    'created-desc',
    'newest',
  );
  addCollection(
    'Best Sellers',
    byPopularity([...visible]).slice(0, 100),
    'What everyone is buying.',
    'best-selling',
    'best_selling',
  );
  addCollection(
    'Sale',
    byPopularity(visible.filter((i) => metas[i].compareAt !== null)),
    'Reduced prices, while stocks last.',
    'price-asc',
    'price_asc',
  );
  addCollection(
    'Summer Edit',
    byPopularity(visible.filter((i) => metas[i].type.season === 'summer')).slice(0, 300),
    'Light layers for warm days.',
    'manual',
    null,
  );
  addCollection(
    'Gifts Under 50',
    byPopularity(visible.filter((i) => metas[i].price < 50)).slice(0, 200),
    'Thoughtful gifts under $50.',
    'manual',
    'price_asc',
  );
  return collections;
}
