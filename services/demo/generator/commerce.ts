// The demo store's markets, price lists (EUR, B2B wholesale) and its B2B catalog.
import type { PriceInput, ShopifyProductInput } from '../../../schemas/catalog.ts';
import type { ConfigInput } from '../../../schemas/config.ts';
import {
  type DemoStore,
  productIdOf,
  productIndexOf,
  DEMO_COMPANY_LOCATION_GID,
  DEMO_COMPANY_ID,
  DEMO_B2B_CUSTOMER_ID,
  DEMO_B2B_CATALOG_ID,
  DEMO_WHOLESALE_PRICE_LIST,
  DEMO_EU_PRICE_LIST,
  money,
} from './model.ts';
import type { DemoBase } from './base.ts';

export function demoCommerce(
  base: DemoBase,
  collections: DemoStore['collections'],
): Pick<DemoStore, 'markets' | 'pricesOf' | 'b2b'> {
  const { o, metas, visible } = base;
  // --- markets, prices, B2B ----------------------------------------------------------------------
  const markets: ConfigInput<'market'>[] = [
    { code: 'us', name: 'United States', market_id: '1001', countries: ['us'], currency: 'usd', price_list_id: null },
    {
      code: 'eu',
      name: 'Europe',
      market_id: '1002',
      countries: ['de', 'fr', 'it', 'es', 'nl', 'be', 'at', 'ie', 'pt', 'fi'],
      currency: 'eur',
      price_list_id: DEMO_EU_PRICE_LIST,
    },
  ];
  const b2bIndexes = visible.filter(
    (i) => metas[i].type.category === 'Home' || metas[i].type.category === 'Accessories',
  );
  const b2bCollections = collections.filter((c) => ['Home', 'Accessories'].includes(String(c.title))).map((c) => c.id);
  const b2bSet = new Set(b2bIndexes);
  const pricesOf = (p: ShopifyProductInput & { id: string }): PriceInput[] => {
    const out: PriceInput[] = [];
    const i = productIndexOf(p.id);
    for (const v of p.variants ?? []) {
      const variantId = String(v.id);
      const usd = Number(v.price);
      // EUR: converted, rounded to .95 / .00 the way European storefronts price
      const eur = Math.max(1, Math.round(usd * 0.93)) - (usd > 20 ? 0.05 : 0);
      out.push({
        price_list_id: DEMO_EU_PRICE_LIST,
        variant_id: variantId,
        product_id: p.id,
        currency: 'EUR',
        price: money(eur),
        compare_at_price: v.compare_at_price ? money(Math.round(Number(v.compare_at_price) * 0.93) - 0.05) : null,
      });
      if (b2bSet.has(i)) {
        out.push({
          price_list_id: DEMO_WHOLESALE_PRICE_LIST,
          variant_id: variantId,
          product_id: p.id,
          currency: 'USD',
          price: money(usd * 0.6),
          compare_at_price: null,
        });
      }
    }
    return out;
  };
  const b2b: DemoStore['b2b'] = {
    catalog: {
      id: DEMO_B2B_CATALOG_ID,
      title: 'Wholesale: home and accessories',
      status: 'active',
      company_location_ids: [DEMO_COMPANY_LOCATION_GID.split('/').pop() as string],
      price_list_id: DEMO_WHOLESALE_PRICE_LIST,
      all_products: false,
      product_ids: b2bIndexes.map(productIdOf),
      collection_ids: b2bCollections,
      updated_at: new Date(o.anchorMs).toISOString(),
    },
    companyLocation: {
      gid: DEMO_COMPANY_LOCATION_GID,
      company_id: DEMO_COMPANY_ID,
      catalog_id: DEMO_B2B_CATALOG_ID,
      price_list_id: DEMO_WHOLESALE_PRICE_LIST,
    },
    customer: { customer_id: DEMO_B2B_CUSTOMER_ID, company_ids: [DEMO_COMPANY_ID] },
  };
  return { markets, pricesOf, b2b };
}
