// Query helpers over the metaobject projection (migrations 0229-0230): the swatches and other entries
// product metafields reference by GID. Store id first, values as server-side parameters; ids as digit
// strings (UInt64), times as ISO 8601 UTC. The read API holds them in its per-store catalog index
// (services/storefront/results/catalog.ts) and reloads them on a change of catalog.metaobjects.v1.
import type { Db } from '../client.ts';
import { toNumericId, UINT64_MAX } from '../../schemas/fields.ts';

/** How a facet value is shown: one or more colours, or an image (schemas/catalog.ts MetaobjectSwatchSchema). */
export type MetaobjectSwatchView =
  | { type: 'color'; colors: string[] }
  | { type: 'image'; url: string; alt: string | null };

export interface MetaobjectView {
  /** the metaobject id (digits) */
  id: string;
  /** gid://shopify/Metaobject/<id>: what product metafields reference */
  gid: string;
  type: string;
  handle: string;
  display_name: string;
  /** field key → value (references as GIDs) */
  fields: Record<string, unknown>;
  swatch: MetaobjectSwatchView | null;
  updated_at: string;
}

interface Row {
  metaobject_id: string;
  type: string;
  handle: string;
  display_name: string;
  fields: string;
  swatch: string;
  updated_at: string;
}

const SELECT = `SELECT toString(metaobject_id) AS metaobject_id, toString(type) AS type, handle, display_name, fields, swatch,
       toString(updated_at) AS updated_at
FROM catalog_metaobjects FINAL
WHERE store_id = {store:String} AND is_deleted = 0`;

export const metaobjectGid = (id: string) => `gid://shopify/Metaobject/${id}`;

/** The stored swatch record (flat: type, colors, url, alt) → the view's union; anything unusable → null. */
export function swatchView(text: string): MetaobjectSwatchView | null {
  if (!text) return null;
  let s: { type?: unknown; colors?: unknown; url?: unknown; alt?: unknown };
  try {
    s = JSON.parse(text);
  } catch {
    return null;
  }
  if (s?.type === 'image' && typeof s.url === 'string')
    return { type: 'image', url: s.url, alt: typeof s.alt === 'string' ? s.alt : null };
  if (s?.type === 'color' && Array.isArray(s.colors) && s.colors.length)
    return { type: 'color', colors: s.colors.map(String) };
  return null;
}

function view(r: Row): MetaobjectView {
  let fields: Record<string, unknown> = {};
  try {
    fields = r.fields ? (JSON.parse(r.fields) as Record<string, unknown>) : {};
  } catch {
    // stored by the processor from a validated record: never malformed in practice
  }
  return {
    id: r.metaobject_id,
    gid: metaobjectGid(r.metaobject_id),
    type: r.type,
    handle: r.handle,
    display_name: r.display_name,
    fields,
    swatch: swatchView(r.swatch),
    updated_at: `${r.updated_at.replace(' ', 'T')}Z`,
  };
}

/** Every current metaobject of a store (optionally of one type), by id. */
export async function allMetaobjects(db: Db, storeId: string, opts: { type?: string } = {}): Promise<MetaobjectView[]> {
  const rows = await db.query<Row>(
    `${SELECT} AND ({type:String} = '' OR type = {type:String}) ORDER BY metaobject_id`,
    { store: storeId, type: opts.type ?? '' },
  );
  return rows.map(view);
}

/** The current metaobjects among `ids` (digits or gid://shopify/Metaobject/<id>), by id; unknown ids are left out. */
export async function metaobjectsByIds(db: Db, storeId: string, ids: readonly string[]): Promise<MetaobjectView[]> {
  const wanted: bigint[] = [];
  for (const id of ids) {
    const digits = toNumericId(id, 'Metaobject');
    if (digits === undefined) continue;
    const v = BigInt(digits);
    if (v <= UINT64_MAX && !wanted.includes(v)) wanted.push(v);
  }
  if (wanted.length === 0) return [];
  const rows = await db.query<Row>(`${SELECT} AND metaobject_id IN {ids:Array(UInt64)} ORDER BY metaobject_id`, {
    store: storeId,
    ids: wanted,
  });
  return rows.map(view);
}
