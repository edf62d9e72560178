// The demo store's products, built lazily, each from its own random stream (so any product can be
// rebuilt alone, in any order).
import type { ShopifyProductInput } from '../../../schemas/catalog.ts';
import { type ColorSpec, LOCATIONS } from './vocab.ts';
import {
  IMAGE_SIZE,
  type ProductMeta,
  INVENTORY_ITEM_BASE,
  IMAGE_ID_BASE,
  MAX_VARIANTS,
  variantIdOf,
  DAY,
  HOUR,
  money,
  retail,
  slug,
} from './model.ts';
import type { DemoBase } from './base.ts';
import { swatchGidOf } from './metaobjects.ts';

export function productBuilder(base: DemoBase): (i: number) => ShopifyProductInput & { id: string } {
  const { o, root, n, metas, imageUrl } = base;
  // --- products (lazily, each from its own stream) -------------------------------------------------
  const variantsOf = (m: ProductMeta) => {
    const sizes = m.type.sizes.length ? m.type.sizes : [null];
    const out: { color: ColorSpec; size: string | null; v: number }[] = [];
    for (const color of m.colors)
      for (const size of sizes) if (out.length < MAX_VARIANTS) out.push({ color, size, v: out.length });
    return out;
  };

  const product = (i: number): ShopifyProductInput & { id: string } => {
    const m = metas[i];
    const rng = root.fork(`product:${i}`);
    const title = `${m.line} ${m.style} ${m.material} ${m.type.name}`;
    const handle = `${slug(title)}-${m.productId.slice(-6)}`;
    const variants = variantsOf(m);
    const options: { name: string; position: number; values: string[] }[] = [
      { name: 'Color', position: 1, values: m.colors.map((c) => c.name) },
    ];
    if (m.type.sizes.length) options.push({ name: 'Size', position: 2, values: [...m.type.sizes] });
    const images = m.colors.map((c, k) => ({
      id: String(IMAGE_ID_BASE + i * MAX_VARIANTS + k + 1),
      src: imageUrl(m.type.slug, c.slug, m.pattern),
      alt: `${title} in ${c.name}`,
      width: IMAGE_SIZE,
      height: IMAGE_SIZE,
      position: k + 1,
      variant_ids: variants.filter((v) => v.color === c).map((v) => variantIdOf(i, v.v)),
    }));
    const tags = [
      m.type.category.toLowerCase(),
      slug(m.material),
      m.type.season,
      ...m.colors.map((c) => c.slug),
      ...(m.compareAt ? ['sale'] : []),
      ...(o.anchorMs - m.createdMs < 30 * DAY ? ['new'] : []),
      ...(m.popularityRank < Math.max(20, n * 0.02) ? ['bestseller'] : []),
      ...(/organic|recycled|vegan|cork/i.test(m.material) ? ['eco'] : []),
    ];
    return {
      id: m.productId,
      title,
      handle,
      body_html:
        `<p>The ${title.toLowerCase()} by ${m.vendor}: ${m.style.toLowerCase()} ${m.type.name.toLowerCase()} in ${m.material.toLowerCase()}, ` +
        `made for ${m.type.season === 'all-season' ? 'every season' : m.type.season}.</p>` +
        `<ul><li>Material: ${m.material}</li><li>Colours: ${m.colors.map((c) => c.name).join(', ')}</li><li>Line: ${m.line}</li></ul>`,
      vendor: m.vendor,
      product_type: m.type.name,
      tags,
      status: m.status,
      published_at: m.publishedMs === null ? null : new Date(m.publishedMs).toISOString(),
      created_at: new Date(m.createdMs).toISOString(),
      updated_at: new Date(Math.max(m.createdMs, m.publishedMs ?? 0) + HOUR).toISOString(),
      options,
      variants: variants.map((v) => {
        const outOfStock = rng.chance(0.06);
        const qty = outOfStock ? 0 : rng.int(1, 120);
        const usShare = Math.round(qty * (0.5 + rng.next() * 0.4));
        const surcharge = v.size === 'XL' || v.size === '50 ml' ? 1.1 : 1;
        const price = retail(m.price * surcharge, rng);
        return {
          id: variantIdOf(i, v.v),
          title: v.size ? `${v.color.name} / ${v.size}` : v.color.name,
          sku: `${m.type.slug.toUpperCase().slice(0, 4)}-${m.productId.slice(-6)}-${v.color.slug.slice(0, 3).toUpperCase()}${v.size ? `-${v.size.replace(/\W+/g, '')}` : ''}`,
          barcode: null,
          price: money(price),
          compare_at_price: m.compareAt ? money(retail(m.compareAt * surcharge, rng)) : null,
          option1: v.color.name,
          option2: v.size,
          option3: null,
          position: v.v + 1,
          available: qty > 0,
          inventory_quantity: qty,
          inventory_item_id: String(INVENTORY_ITEM_BASE + i * MAX_VARIANTS + v.v + 1),
          inventory_policy: 'deny',
          inventory_management: 'shopify',
          requires_components: false,
          image_id: String(IMAGE_ID_BASE + i * MAX_VARIANTS + m.colors.indexOf(v.color) + 1),
          inventory_levels: [
            { location_id: LOCATIONS[0].id, available: usShare },
            { location_id: LOCATIONS[1].id, available: qty - usShare },
          ],
        };
      }),
      images,
      metafields: [
        { namespace: 'custom', key: 'material', value: m.material, type: 'single_line_text_field' },
        { namespace: 'custom', key: 'line', value: m.line, type: 'single_line_text_field' },
        // the colours' swatch metaobjects (metaobjects.ts), as Shopify's category metafield holds them
        {
          namespace: 'shopify',
          key: 'color-pattern',
          value: JSON.stringify(m.colors.map(swatchGidOf)),
          type: 'list.metaobject_reference',
        },
      ],
      is_gift_card: false,
      category: {
        id: `demo-${slug(m.type.category)}-${m.type.slug}`,
        name: m.type.name,
        full_name: `${m.type.category} > ${m.type.plural}`,
      },
    };
  };
  return product;
}
