// The demo store's configuration: sort orders, blocks, redirects and synonyms.
import { type DemoStore, DEMO_BLOCKS } from './model.ts';

export function demoConfig(): DemoStore['config'] {
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
    ],
    redirect_term: [
      { term: 'gift card', url: '/pages/gift-cards', match: 'exact' },
      { term: 'returns', url: '/pages/shipping-and-returns', match: 'exact' },
    ],
    synonym: [
      { id: 'sneakers', type: 'two_way', terms: ['sneakers', 'trainers', 'kicks'] },
      { id: 'tshirt', type: 'two_way', terms: ['t-shirt', 'tee', 'tshirt'] },
      { id: 'trousers', type: 'one_way', term: 'pants', synonyms: ['trousers', 'jeans'] },
      { id: 'sweater', type: 'two_way', terms: ['sweater', 'jumper', 'pullover'] },
    ],
  };
  return config;
}
