// Catalog records for the in-memory engine tests: a one-variant product as the catalog projection serves
// it (clickhouse/queries/catalog.ts ProductView), published, in stock; `extra` overrides any field.
import type { ProductView } from '../../clickhouse/queries/catalog.ts';

export function productView(
  id: string,
  title: string,
  type: string,
  price: number,
  extra: Partial<ProductView> & { option?: { name: string; value: string } } = {},
): ProductView {
  const { option = { name: 'Color', value: 'Red' }, ...rest } = extra;
  return {
    id,
    title,
    handle: `p-${id}`,
    body_html: `<p>${title}</p>`,
    vendor: 'Acme',
    product_type: type,
    tags: [],
    status: 'active',
    published_at: '2026-01-01T00:00:00Z',
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    options: [{ name: option.name, position: 1, values: [option.value] }],
    variants: [
      {
        id: `${id}1`,
        title: option.value,
        sku: `SKU-${id}`,
        barcode: null,
        price: price.toFixed(2),
        compare_at_price: null,
        option1: option.value,
        option2: null,
        option3: null,
        position: 1,
        available: true,
        inventory_quantity: 5,
        inventory_item_id: null,
        inventory_policy: 'deny',
        inventory_management: null,
        image_id: null,
        requires_components: false,
      },
    ],
    images: [],
    metafields: {},
    is_gift_card: false,
    combined_listing_parent_product_id: null,
    combined_listing_role: null,
    has_variants_that_require_components: false,
    category: null,
    price_range: { from: price.toFixed(2), to: price.toFixed(2) },
    available: true,
    ...rest,
  };
}
