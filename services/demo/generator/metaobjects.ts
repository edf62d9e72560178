// The demo store's swatch metaobjects: one `shopify--color-pattern` metaobject per colour of the
// vocabulary (handle = the colour slug, display name = the colour name, fields label and color hex), the
// patterned colours with an image swatch as well (a file reference resolved to the rendered swatch image,
// services/demo/generator/images.ts). Every product references its colours' metaobjects from the metafield
// `shopify.color-pattern` (products.ts), so facets on it can show swatches (facetDisplay). Pure data: no
// random draws, so adding them changed no other section of the store.
import type { ShopifyMetaobjectInput } from '../../../schemas/catalog.ts';
import { swatchImageName } from './images.ts';
import { DAY, type ResolvedDemoOptions } from './model.ts';
import { COLORS, type ColorSpec } from './vocab.ts';

export const SWATCH_METAOBJECT_TYPE = 'shopify--color-pattern';
export const METAOBJECT_ID_BASE = 7_300_000_000;
/** the MediaImage ids of the image swatches' files */
export const SWATCH_IMAGE_ID_BASE = 7_310_000_000;

export type DemoMetaobject = ShopifyMetaobjectInput & { id: string; type: string; handle: string };

const indexOf = (c: ColorSpec) => {
  const i = COLORS.findIndex((x) => x.slug === c.slug);
  if (i < 0) throw new Error(`not a demo colour: ${c.slug}`);
  return i;
};

/** the metaobject id of a colour's swatch */
export const swatchIdOf = (c: ColorSpec) => String(METAOBJECT_ID_BASE + indexOf(c) + 1);
/** the GID product metafields reference a colour's swatch by */
export const swatchGidOf = (c: ColorSpec) => `gid://shopify/Metaobject/${swatchIdOf(c)}`;

export function demoMetaobjects(o: ResolvedDemoOptions): DemoMetaobject[] {
  const at = new Date(o.anchorMs - 700 * DAY).toISOString();
  return COLORS.map((c, i) => {
    const fields: NonNullable<Extract<ShopifyMetaobjectInput['fields'], unknown[]>> = [
      { key: 'label', value: c.name, type: 'single_line_text_field' },
      { key: 'color', value: c.hex, type: 'color' },
    ];
    if (c.swatchPattern !== undefined) {
      fields.push({
        key: 'image',
        value: `gid://shopify/MediaImage/${SWATCH_IMAGE_ID_BASE + i + 1}`,
        type: 'file_reference',
        reference: {
          image: {
            url: `${o.imageBaseUrl}/${swatchImageName(c.slug, c.swatchPattern)}`,
            altText: `${c.name} ${c.swatchPattern === 1 ? 'stripe' : c.swatchPattern === 2 ? 'dot' : 'band'} pattern`,
          },
        },
      });
    }
    return {
      id: swatchIdOf(c),
      type: SWATCH_METAOBJECT_TYPE,
      handle: c.slug,
      display_name: c.name,
      fields,
      updated_at: at,
    };
  });
}
