// Image features (migration 0320, written by streams/images) for the read API's image index: a store's
// current rows page by page, or the rows of named items (the `agg:images` re-reads). Store-scoped, values
// as server-side parameters; ids as digit strings.
import type { Db } from '../client.ts';
import { u64s } from './catalog.ts';

export interface ImageFeatureRow {
  item_type: 'product' | 'article' | 'page';
  item_id: string;
  model: string;
  image_srcs: string[];
  image_status: string[];
  image_hashes: string[];
  image_vectors: number[][];
}

// aliases differ from the column names: an alias named like a column would shadow it in WHERE
const COLUMNS = `toString(item_type) AS type_s, toString(item_id) AS id_s, toString(model) AS model_s,
  image_srcs, arrayMap(s -> toString(s), image_status) AS status_s, image_hashes, image_vectors`;

interface Raw {
  type_s: ImageFeatureRow['item_type'];
  id_s: string;
  model_s: string;
  image_srcs: string[];
  status_s: string[];
  image_hashes: string[];
  image_vectors: number[][];
}

const rowOf = (r: Raw): ImageFeatureRow => ({
  item_type: r.type_s,
  item_id: r.id_s,
  model: r.model_s,
  image_srcs: r.image_srcs,
  image_status: r.status_s,
  image_hashes: r.image_hashes,
  image_vectors: r.image_vectors,
});

/** One page of a store's current feature rows of an item type, in item_id order after `after`. */
export async function imageFeaturePage(
  db: Db,
  storeId: string,
  itemType: ImageFeatureRow['item_type'],
  opts: { after: string; limit: number },
): Promise<ImageFeatureRow[]> {
  const rows = await db.query<Raw>(
    `SELECT ${COLUMNS}
     FROM image_features FINAL
     WHERE store_id = {store:String} AND item_type = {type:String} AND item_id > {after:UInt64} AND is_deleted = 0
     ORDER BY item_id
     LIMIT {limit:UInt32}`,
    { store: storeId, type: itemType, after: BigInt(opts.after), limit: opts.limit },
  );
  return rows.map(rowOf);
}

/** The current feature rows of the named items (absent: deleted or never computed). */
export async function imageFeaturesByIds(
  db: Db,
  storeId: string,
  itemType: ImageFeatureRow['item_type'],
  ids: readonly string[],
): Promise<ImageFeatureRow[]> {
  if (ids.length === 0) return [];
  const rows = await db.query<Raw>(
    `SELECT ${COLUMNS}
     FROM image_features FINAL
     WHERE store_id = {store:String} AND item_type = {type:String} AND item_id IN {ids:Array(UInt64)} AND is_deleted = 0`,
    { store: storeId, type: itemType, ids: u64s(ids) },
  );
  return rows.map(rowOf);
}

/** Per store and status: how many images the processors described or could not (operations, tests). */
export async function imageStatusCounts(db: Db, storeId: string): Promise<Record<string, number>> {
  const rows = await db.query<{ status: string; n: string }>(
    `SELECT toString(status) AS status, toString(count()) AS n
     FROM image_features FINAL ARRAY JOIN image_status AS status
     WHERE store_id = {store:String} AND is_deleted = 0
     GROUP BY status`,
    { store: storeId },
  );
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
