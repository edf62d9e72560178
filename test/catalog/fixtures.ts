// Shopify-shaped payloads (REST / webhook JSON) for the catalog tests.

export function shopifyProduct(over: Record<string, unknown> = {}) {
  return {
    id: 632910392,
    admin_graphql_api_id: 'gid://shopify/Product/632910392',
    title: 'IPod Nano - 8GB',
    body_html: '<p>It&#39;s the <b>small</b> iPod with one very big idea: <em>Video</em>.</p>',
    vendor: 'Apple',
    product_type: 'Cult Products',
    created_at: '2024-03-01T10:00:00-05:00',
    handle: 'ipod-nano',
    updated_at: '2024-03-05T12:00:00-05:00',
    published_at: '2024-03-01T10:00:00-05:00',
    template_suffix: null,
    status: 'active',
    published_scope: 'web',
    tags: 'Emotive, Flash Memory, MP3, Music',
    variants: [
      {
        id: 808950810,
        product_id: 632910392,
        title: 'Pink',
        price: '199.00',
        sku: 'IPOD2008PINK',
        position: 1,
        inventory_policy: 'deny',
        compare_at_price: null,
        option1: 'Pink',
        option2: null,
        option3: null,
        barcode: '1234_pink',
        inventory_item_id: 808950810,
        inventory_quantity: 10,
        inventory_management: 'shopify',
        image_id: 562641783,
      },
      {
        id: 49148385,
        product_id: 632910392,
        title: 'Red',
        price: '189.50',
        sku: 'IPOD2008RED',
        position: 2,
        inventory_policy: 'deny',
        compare_at_price: '249.00',
        option1: 'Red',
        option2: null,
        option3: null,
        barcode: '1234_red',
        inventory_item_id: 49148385,
        inventory_quantity: 0,
        inventory_management: 'shopify',
        image_id: null,
      },
    ],
    options: [{ id: 594680422, product_id: 632910392, name: 'Color', position: 1, values: ['Pink', 'Red'] }],
    images: [
      {
        id: 850703190,
        position: 2,
        src: 'https://cdn.shopify.com/s/files/1/ipod-nano-2.png',
        alt: null,
        width: 123,
        height: 456,
        variant_ids: [],
      },
      {
        id: 562641783,
        position: 1,
        src: 'https://cdn.shopify.com/s/files/1/ipod-nano.png',
        alt: 'Pink iPod',
        width: 110,
        height: 140,
        variant_ids: [808950810],
      },
    ],
    image: null,
    metafields: [
      { namespace: 'custom', key: 'material', value: 'aluminium', type: 'single_line_text_field' },
      { namespace: 'custom', key: 'colors', value: '["pink","red"]', type: 'list.single_line_text_field' },
      { namespace: 'specs', key: 'weight_g', value: '21', type: 'number_integer' },
    ],
    ...over,
  };
}

/** A gift card product: Shopify flags it, and its variants need no inventory tracking. */
export function shopifyGiftCard(over: Record<string, unknown> = {}) {
  return shopifyProduct({
    id: 1122334455,
    title: 'Gift Card',
    handle: 'gift-card',
    vendor: 'Snowdevil',
    product_type: 'Gift Cards',
    created_at: '2024-01-15T08:30:00Z',
    updated_at: '2024-01-16T08:30:00Z',
    published_at: '2024-01-15T09:00:00Z',
    is_gift_card: true,
    variants: [
      {
        id: 11223344551,
        title: '$25',
        price: '25.00',
        position: 1,
        option1: '$25',
        inventory_management: null,
        inventory_policy: 'deny',
        inventory_quantity: 0,
      },
      {
        id: 11223344552,
        title: '$50',
        price: '50.00',
        position: 2,
        option1: '$50',
        inventory_management: null,
        inventory_policy: 'deny',
        inventory_quantity: 0,
      },
    ],
    options: [{ name: 'Denomination', position: 1, values: ['$25', '$50'] }],
    images: [],
    metafields: [],
    ...over,
  });
}

/**
 * A combined listing: the parent groups child products (one per colour); each child names its parent.
 * The parent's bundle variant requires components.
 */
export function shopifyCombinedListing(role: 'parent' | 'child', over: Record<string, unknown> = {}) {
  const parent = role === 'parent';
  return shopifyProduct({
    id: parent ? 9900001 : 9900002,
    title: parent ? 'Trail Jacket' : 'Trail Jacket - Green',
    handle: parent ? 'trail-jacket' : 'trail-jacket-green',
    vendor: 'Northwind',
    product_type: 'Jackets',
    created_at: '2024-02-10T12:00:00+01:00',
    updated_at: '2024-02-11T12:00:00+01:00',
    combined_listing_role: parent ? 'PARENT' : 'child',
    combined_listing_parent_product_id: parent ? null : 'gid://shopify/Product/9900001',
    variants: [
      {
        id: parent ? 99000011 : 99000021,
        title: 'Green',
        price: '120.00',
        position: 1,
        option1: 'Green',
        inventory_management: 'shopify',
        inventory_quantity: 3,
        requires_components: parent,
      },
    ],
    options: [{ name: 'Color', position: 1, values: ['Green'] }],
    images: [],
    metafields: [],
    ...over,
  });
}

export function shopifyCollection(over: Record<string, unknown> = {}) {
  return {
    id: 841564295,
    handle: 'ipods',
    title: 'IPods',
    updated_at: '2024-03-02T09:00:00Z',
    body_html: '<p>The best selling ipod ever</p>',
    published_at: '2024-03-01T00:00:00Z',
    sort_order: 'manual',
    template_suffix: null,
    published_scope: 'web',
    image: { src: 'https://cdn.shopify.com/s/files/1/ipods.png', alt: 'iPods', width: 300, height: 200 },
    metafields: [
      { namespace: 'app--1234', key: 'default_sort_order', value: 'best_selling', type: 'single_line_text_field' },
    ],
    ...over,
  };
}

export function shopifyArticle(over: Record<string, unknown> = {}) {
  return {
    id: 134645308,
    title: 'get on the train now',
    created_at: '2024-02-01T10:00:00Z',
    body_html:
      '<p>Do <b>you</b> want to get on the <img src="https://cdn.example.com/train.jpg" alt="train" onerror="x()"> train?</p><script>alert(1)</script>',
    blog_id: 241253187,
    author: 'Dennis',
    published_at: '2024-02-02T10:00:00Z',
    updated_at: '2024-02-03T10:00:00Z',
    summary_html: null,
    template_suffix: null,
    handle: 'get-on-the-train-now',
    tags: 'Announcing, Mystery',
    image: { src: 'https://cdn.example.com/articles/train.jpg', width: 800, height: 600, alt: 'A train' },
    ...over,
  };
}

export function shopifyOrder(over: Record<string, unknown> = {}) {
  return {
    id: 450789469,
    admin_graphql_api_id: 'gid://shopify/Order/450789469',
    created_at: '2024-03-10T12:00:00Z',
    updated_at: '2024-03-10T12:05:00Z',
    processed_at: '2024-03-10T12:00:00Z',
    cancelled_at: null,
    currency: 'USD',
    total_price: '598.94',
    test: false,
    customer: { id: 207119551 },
    note_attributes: [{ name: '_sd_session_id', value: 'sess-123' }],
    line_items: [
      { id: 1, product_id: 632910392, variant_id: 808950810, quantity: 2, price: '199.00', gift_card: false },
      { id: 2, product_id: 921728736, variant_id: 457924702, quantity: 1, price: '200.94', gift_card: false },
      { id: 3, product_id: null, variant_id: null, quantity: 1, price: '0.00', gift_card: false },
    ],
    ...over,
  };
}
