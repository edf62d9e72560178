// Product records: the `attributes` selection and the record of a tile.
//
// `attributes` lists root attributes (`title`, `variants`, …) and nested selections:
//   images[:2].src            a slice (`[:n]`, `[a:b]`, `[n]`) of an array, then one field of each item
//   variants[sku=ABC].price   the items whose field equals the value, then one field
//   metafields[namespace=x]   one namespace of the metafields object
// Several selections of one root merge (their fields and filters add up); a bare root selects it whole.
// Without `attributes`, every attribute except the opt-in ones (`collection_titles`) is returned.
// Unknown roots and malformed selections are a 422 naming `attributes[i]`.
import type { ProductRecord } from '../../../schemas/storefront.ts';
import type { VariantView } from '../../../clickhouse/queries/catalog.ts';
import { normalizeOptionCode } from '../../../schemas/config.ts';
import { StorefrontError } from '../errors.ts';
import type { Scope } from './scope.ts';
import { namedTags, tilePrices, type Tile, variantOption } from './tiles.ts';

export const ATTRIBUTES = [
  'id',
  'title',
  'handle',
  'body_html',
  'vendor',
  'product_type',
  'tags',
  'images',
  'available',
  'created_at',
  'updated_at',
  'published_at',
  'price_range',
  'options',
  'original_options',
  'metafields',
  'named_tags',
  'calculated',
  'category',
  'featured_media',
  'is_gift_card',
  'has_variants_that_require_components',
  'combined_listing_parent_product_id',
  'combined_listing_role',
  'first_or_matched_variant',
  'variants',
] as const;
const OPT_IN = ['collection_titles'] as const;
type Root = (typeof ATTRIBUTES)[number] | (typeof OPT_IN)[number];
const ROOTS = new Set<string>([...ATTRIBUTES, ...OPT_IN]);

interface Selection {
  /** whole items (no field restriction) */
  all: boolean;
  fields: Set<string>;
  slice: [number, number | undefined] | null;
  /** item filters: field → value (any of them matches) */
  where: { field: string; value: string }[];
}

export type Projection = Map<Root, Selection>;

const SELECTOR = /^([a-z_]+)(?:\[([^\]]*)\])?(?:\.([a-z_0-9]+))?$/;

export function parseAttributes(list: readonly string[] | undefined, optIn: readonly Root[] = []): Projection {
  const out: Projection = new Map();
  if (!list) {
    for (const r of [...ATTRIBUTES, ...optIn]) out.set(r, { all: true, fields: new Set(), slice: null, where: [] });
    return out;
  }
  const fields: { path: string; message: string }[] = [];
  list.forEach((raw, i) => {
    const m = SELECTOR.exec(raw.trim());
    if (!m || !ROOTS.has(m[1])) {
      fields.push({
        path: `attributes[${i}]`,
        message: m ? `unknown attribute ${m[1]}` : 'malformed attribute selector',
      });
      return;
    }
    const root = m[1] as Root;
    const sel = out.get(root) ?? { all: false, fields: new Set<string>(), slice: null, where: [] };
    out.set(root, sel);
    if (m[2] !== undefined) {
      const slice = /^(-?\d*)(?::(-?\d*))?$/.exec(m[2]);
      const eq = /^([a-z_0-9]+)=(.*)$/.exec(m[2]);
      if (slice && m[2] !== '') {
        const a = slice[1] === '' ? 0 : Number(slice[1]);
        const b = slice[2] === undefined ? a + 1 : slice[2] === '' ? undefined : Number(slice[2]);
        sel.slice = [a, b];
      } else if (eq) sel.where.push({ field: eq[1], value: eq[2] });
      else fields.push({ path: `attributes[${i}]`, message: 'expected [a:b], [n] or [field=value]' });
    }
    if (m[3] !== undefined) sel.fields.add(m[3]);
    else sel.all = true;
  });
  if (fields.length)
    throw new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', fields);
  return out;
}

const moneyText = (n: number) => n.toFixed(2);
const iso = (s: string | null) => s;

function pick<T extends Record<string, unknown>>(item: T, sel: Selection): Partial<T> {
  if (sel.all || sel.fields.size === 0) return item;
  const out: Partial<T> = {};
  for (const f of sel.fields) if (f in item) (out as Record<string, unknown>)[f] = item[f];
  return out;
}

function selectList<T extends Record<string, unknown>>(items: T[], sel: Selection): Partial<T>[] {
  let list = items;
  if (sel.where.length) list = list.filter((x) => sel.where.some((w) => String(x[w.field] ?? '') === w.value));
  if (sel.slice) list = list.slice(sel.slice[0], sel.slice[1]);
  return list.map((x) => pick(x, sel));
}

export interface RenderOptions {
  projection: Projection;
  scope: Scope;
  /** ISO 8601 strings (search, browse) or Unix seconds (blocks) */
  timestamps: 'iso' | 'unix';
  /** defaultSelectedOptions: normalized option code → values (OR), null when skipped */
  selected: Map<string, Set<string>> | null;
  /** collection titles of a product, for opt-in `collection_titles` */
  collectionTitles?: (productId: string) => string[];
}

function variantRecord(t: Tile, v: VariantView, i: number, opts: RenderOptions) {
  const price = tilePrices(t, opts.scope)[i];
  return {
    id: Number(v.id),
    title: v.title,
    sku: v.sku,
    barcode: v.barcode,
    price: moneyText(price.price),
    compare_at_price: price.compareAt === null ? null : moneyText(price.compareAt),
    option1: v.option1,
    option2: v.option2,
    option3: v.option3,
    selected_options: t.item.p.options.flatMap((o) => {
      const value = variantOption(t.item, v, normalizeOptionCode(o.name));
      return value === null ? [] : [{ name: o.name, value }];
    }),
    position: v.position,
    available: v.available,
    inventory_quantity: v.inventory_quantity,
    image_id: v.image_id === null ? null : Number(v.image_id),
    requires_components: v.requires_components,
  };
}

/**
 * the variant `first_or_matched_variant` names: the first matching a selected option value, else the first.
 * A variant tile (breakout) follows the entries of the other options only: its breakout value is fixed.
 */
function matchedVariantIndex(t: Tile, selected: Map<string, Set<string>> | null): number {
  if (selected && selected.size > 0) {
    const i = t.variants.findIndex((v) => {
      for (const [code, values] of selected) {
        if (t.breakout && code === t.breakout.optionCode) continue;
        const value = variantOption(t.item, v, code);
        if (value !== null && values.has(value)) return true;
      }
      return false;
    });
    if (i >= 0) return i;
  }
  return 0;
}

/** the image a tile leads with: a variant tile's variant image, else the product's first */
export function featuredImageOf(t: Tile, selected: Map<string, Set<string>> | null = null) {
  const p = t.item.p;
  const lead = t.variants[matchedVariantIndex(t, selected)];
  const own = t.breakout && lead?.image_id ? p.images.find((im) => im.id === lead.image_id) : undefined;
  return own ?? p.images[0];
}

export function renderTile(t: Tile, opts: RenderOptions): ProductRecord {
  const p = t.item.p;
  const { projection } = opts;
  const out: Record<string, unknown> = {};
  const ts = (s: string | null, sec: number | null) => (opts.timestamps === 'unix' ? sec : iso(s));
  const prices = projection.has('price_range') || projection.has('calculated') ? tilePrices(t, opts.scope) : [];
  const matched = matchedVariantIndex(t, opts.selected);
  const leadVariant = t.variants[matched];
  const variantImage = t.breakout ? featuredImageOf(t, opts.selected) : undefined;
  const images = () => {
    const list = p.images.map((im) => ({
      alt: im.alt,
      src: im.src,
      width: im.width,
      height: im.height,
      variant_ids: im.variant_ids.map(Number),
    }));
    // a variant tile shows its own image first
    if (variantImage) {
      const k = p.images.indexOf(variantImage);
      if (k > 0) list.unshift(...list.splice(k, 1));
    }
    return list;
  };

  out.__typename = t.breakout ? 'Variant' : 'Product';
  if (t.breakout) {
    out.product_id = Number(p.id);
    out.variant_id = Number(leadVariant.id);
  }
  for (const [root, sel] of projection) {
    switch (root) {
      case 'id':
        out.id = t.breakout ? Number(leadVariant.id) : Number(p.id);
        break;
      case 'title':
        out.title = t.breakout?.valueInTitle ? `${p.title} - ${t.breakout.value}` : p.title;
        break;
      case 'handle':
      case 'body_html':
      case 'vendor':
      case 'product_type':
      case 'is_gift_card':
      case 'has_variants_that_require_components':
      case 'combined_listing_role':
        out[root] = p[root];
        break;
      case 'tags':
        out.tags = sel.slice ? p.tags.slice(sel.slice[0], sel.slice[1]) : p.tags;
        break;
      case 'named_tags':
        out.named_tags = namedTags(p.tags);
        break;
      case 'combined_listing_parent_product_id':
        out[root] = p.combined_listing_parent_product_id === null ? null : Number(p.combined_listing_parent_product_id);
        break;
      case 'images':
        out.images = selectList(images(), sel);
        break;
      case 'featured_media': {
        const first = images()[0];
        out.featured_media = first ? pick(first, sel) : null;
        break;
      }
      case 'available':
        out.available = t.variants.some((v) => v.available);
        break;
      case 'created_at':
        out.created_at = ts(p.created_at, t.item.createdSec);
        break;
      case 'updated_at':
        out.updated_at = ts(p.updated_at, t.item.updatedSec);
        break;
      case 'published_at':
        out.published_at = ts(p.published_at, t.item.publishedSec);
        break;
      case 'price_range': {
        const ps = prices.map((x) => x.price);
        out.price_range = ps.length
          ? pick({ from: moneyText(Math.min(...ps)), to: moneyText(Math.max(...ps)) }, sel)
          : pick({ from: p.price_range.from, to: p.price_range.to }, sel);
        break;
      }
      case 'options':
      case 'original_options': {
        const opt = p.options.map((o) => {
          // a variant tile lists the values its variants have
          const values =
            root === 'options' && t.breakout
              ? o.values.filter((v) =>
                  t.variants.some((x) => variantOption(t.item, x, normalizeOptionCode(o.name)) === v),
                )
              : o.values;
          return { name: o.name, position: o.position, values };
        });
        out[root] = selectList(opt, sel);
        break;
      }
      case 'metafields': {
        const ns = sel.where.filter((w) => w.field === 'namespace').map((w) => w.value);
        out.metafields = ns.length
          ? Object.fromEntries(Object.entries(p.metafields).filter(([k]) => ns.includes(k)))
          : p.metafields;
        break;
      }
      case 'calculated': {
        const ps = prices.map((x) => x.price);
        const cs = prices.flatMap((x) => (x.compareAt === null ? [] : [x.compareAt]));
        out.calculated = pick(
          {
            price_min: moneyText(ps.length ? Math.min(...ps) : 0),
            price_max: moneyText(ps.length ? Math.max(...ps) : 0),
            compare_at_price_min: cs.length ? moneyText(Math.min(...cs)) : null,
            compare_at_price_max: cs.length ? moneyText(Math.max(...cs)) : null,
            on_sale: prices.some((x) => x.compareAt !== null && x.compareAt > x.price),
            discounted: prices.some((x) => x.discounted),
            inventory_total: t.variants.reduce((n, v) => n + Math.max(0, v.inventory_quantity ?? 0), 0),
          },
          sel,
        );
        break;
      }
      case 'category':
        out.category = p.category ? pick(p.category, sel) : null;
        break;
      case 'first_or_matched_variant':
        out.first_or_matched_variant = leadVariant ? pick(variantRecord(t, leadVariant, matched, opts), sel) : null;
        break;
      case 'variants':
        out.variants = selectList(
          t.variants.map((v, i) => variantRecord(t, v, i, opts)),
          sel,
        );
        break;
      case 'collection_titles':
        out.collection_titles = opts.collectionTitles?.(p.id) ?? [];
        break;
    }
  }
  return out as ProductRecord;
}
