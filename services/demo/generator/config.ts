// The demo store's configuration: sort orders (plain, weighted and boosted), blocks (the cart's free-shipping
// picks among them), redirects, synonyms, a merchandising rule with pins, a boost and banners, and a variant
// breakout by colour.
import type { ConfigInput } from '../../../schemas/config.ts';
import type { DemoBase } from './base.ts';
import {
  type DemoStore,
  DAY,
  DEMO_BLOCKS,
  DEMO_BREAKOUT_COLLECTION,
  DEMO_MERCH_COLLECTION,
  DEMO_MERCH_RULE_ID,
} from './model.ts';
import { PRODUCT_TYPES, SYNONYMS } from './vocab.ts';

/** the cart's free-shipping picks (free_shipping_picks, anchor `cart`): products that close the gap to
 * `context.freeShippingThreshold`, the smallest overshoot first (the demo shop's cart page shows it) */
export const DEMO_FREE_SHIPPING_BLOCK = '01JDDEM0000000000000000B06';

export function demoConfig(base: DemoBase, collections: DemoStore['collections']): DemoStore['config'] {
  const merch = collections.find((c) => c.handle === DEMO_MERCH_COLLECTION);
  const members = merch?.product_ids ?? [];
  const banner = (slug: string) => ({ src: base.imageUrl(slug, 'beige', 0), alt: 'Summer edit' });
  const layout = (placement: 'hero' | 'inline', position: number | null) => ({
    placement,
    width: placement === 'hero' ? 2 : 1,
    height: 1,
    position,
  });
  // --- configuration -----------------------------------------------------------------------------
  const config: DemoStore['config'] = {
    sort_order: [
      {
        code: 'best_selling',
        nickname: 'Best selling',
        scope: 'both',
        expressions: [{ attribute: 'revenue_7d', direction: 'desc' }],
      },
      {
        code: 'newest',
        nickname: 'Newest',
        scope: 'both',
        expressions: [{ attribute: 'published_at', direction: 'desc' }],
      },
      {
        code: 'price_asc',
        nickname: 'Price: low to high',
        scope: 'both',
        expressions: [{ attribute: 'price', direction: 'asc' }],
      },
      {
        code: 'price_desc',
        nickname: 'Price: high to low',
        scope: 'both',
        expressions: [{ attribute: 'price', direction: 'desc' }],
      },
      {
        code: 'trending',
        nickname: 'Trending',
        scope: 'both',
        expressions: [{ attribute: 'trending', direction: 'desc' }],
      },
      {
        code: 'popularity',
        nickname: 'Most popular',
        scope: 'both',
        expressions: [{ attribute: 'popularity', direction: 'desc' }],
      },
      {
        // a weighted group (popularity twice as heavy as revenue) with eco products boosted by half
        code: 'featured',
        nickname: 'Featured',
        scope: 'collection',
        expressions: [
          { attribute: 'popularity', direction: 'desc', weight: 2 },
          { attribute: 'revenue_7d', direction: 'desc', weight: 1 },
          { attribute: 'tag:eco', direction: 'desc', boost: { mode: 'multiplicative', factor: 1.5 } },
        ],
      },
    ],
    block: [
      {
        id: DEMO_BLOCKS.bestSellers,
        title: 'Best sellers',
        anchor_type: 'none',
        strategy_key: 'best_sellers',
        priority: 10,
      },
      {
        id: DEMO_BLOCKS.trendingNow,
        title: 'Trending now',
        anchor_type: 'home',
        strategy_key: 'trending_now',
        fallback: [{ block_id: DEMO_BLOCKS.bestSellers, mode: 'fill' }],
        priority: 20,
      },
      {
        id: DEMO_BLOCKS.newArrivals,
        title: 'New arrivals',
        anchor_type: 'none',
        strategy_key: 'new_arrivals',
        priority: 30,
      },
      {
        id: DEMO_BLOCKS.alsoViewed,
        title: 'Customers also viewed',
        anchor_type: 'product',
        strategy_key: 'customers_also_viewed',
        safeguards: { min_products: 3, max_products: 12, hide_out_of_stock: true, personalization_strength: 0.2 },
        fallback: [{ block_id: DEMO_BLOCKS.bestSellers, mode: 'fill' }],
        priority: 10,
      },
      {
        id: DEMO_BLOCKS.boughtTogether,
        title: 'Frequently bought together',
        anchor_type: 'product',
        strategy_key: 'frequently_bought_together',
        safeguards: { min_products: 1, max_products: 4, hide_out_of_stock: true, personalization_strength: 0 },
        fallback: [{ block_id: DEMO_BLOCKS.bestSellers, mode: 'fill' }],
        priority: 20,
      },
      {
        id: DEMO_FREE_SHIPPING_BLOCK,
        title: 'Add one for free shipping',
        anchor_type: 'cart',
        strategy_key: 'free_shipping_picks',
        safeguards: { min_products: 1, max_products: 8, hide_out_of_stock: true, personalization_strength: 0 },
        priority: 10,
      },
    ],
    redirect_term: [
      { term: 'gift card', url: '/pages/gift-cards', match: 'exact' },
      { term: 'returns', url: '/pages/shipping-and-returns', match: 'exact' },
    ],
    synonym: SYNONYMS.map((x) => structuredClone(x) as unknown as ConfigInput<'synonym'>),
    merch_rule: members.length
      ? [
          {
            id: DEMO_MERCH_RULE_ID,
            name: 'Summer edit: featured picks',
            collection_handle: DEMO_MERCH_COLLECTION,
            pins: [
              { product_id: members[Math.min(5, members.length - 1)], position: 1 },
              {
                product_id: members[Math.min(9, members.length - 1)],
                position: 2,
                conditions: { expressions: [{ property: 'geo.country', operator: 'in', values: ['DE', 'FR', 'IT'] }] },
              },
            ],
            boosts: [{ match: { expressions: [{ property: 'tags', operator: 'eq', values: ['eco'] }] }, factor: 1.5 }],
            banners: [
              {
                id: '01JDDEM0000000000000000N01',
                name: 'Summer lookbook',
                mode: 'inject',
                link: '/blogs/journal',
                web_media: banner(PRODUCT_TYPES[0].slug),
                mobile_media: banner(PRODUCT_TYPES[0].slug),
                web_layout: layout('inline', 4),
                mobile_layout: layout('inline', 2),
              },
              {
                id: '01JDDEM0000000000000000N02',
                name: 'Summer hero',
                mode: 'overtake',
                web_media: banner(PRODUCT_TYPES[1].slug),
                mobile_media: banner(PRODUCT_TYPES[1].slug),
                web_layout: layout('hero', null),
                mobile_layout: layout('hero', null),
                schedule_start_at: new Date(base.o.anchorMs - DAY).toISOString(),
                schedule_end_at: new Date(base.o.anchorMs + 3650 * DAY).toISOString(),
              },
              {
                id: '01JDDEM0000000000000000N03',
                name: 'App-only offer',
                mode: 'overtake',
                web_media: banner(PRODUCT_TYPES[2].slug),
                mobile_media: banner(PRODUCT_TYPES[2].slug),
                web_layout: layout('inline', 8),
                mobile_layout: layout('inline', 4),
                conditions: { expressions: [{ property: 'device', operator: 'eq', values: ['mobile'] }] },
              },
            ],
          },
        ]
      : [],
    variant_breakout: [
      {
        id: 'colour-tiles',
        name: 'Colour tiles',
        option_code: 'Color',
        applies: 'collections',
        include_option_value_in_title: true,
        collection_handles: [DEMO_BREAKOUT_COLLECTION],
      },
    ],
  };
  return config;
}
