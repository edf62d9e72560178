// The catalog bulk import as a library: parse an export (JSON Lines or a JSON array), normalize each record
// the way the webhooks do, write through the catalog writer with checkpoints. The CLI is import.ts.
//
// Bulk import of a catalog export into the catalog topics (and commerce.orders.v1).
//
//   (CLI) npm run catalog:import -- --store <id> --file export.jsonl [--resume | --restart] [--max-errors N]
//                             [--batch-size N] [--json]
//
// Input: JSON Lines (one object per line) or one JSON array of objects. Each object names its `type`
// (product, collection, article, page, inventory_level, price, b2b_catalog, order, metaobject) and is
// otherwise the platform object (Shopify REST shape, see schemas/catalog.ts; a metaobject's own type is
// `metaobject_type`, since `type` names the line); `"deleted": true` writes a tombstone.
//
// - Records go through the same normalization and the same writer as the webhooks (version guard,
//   idempotent producer, acks=all), so importing an old export after live webhooks never rolls a product
//   back, and importing the same file twice changes nothing.
// - Resumable: after every acknowledged batch the last committed line number is written to
//   `<file>.checkpoint` (atomically, with the store and a fingerprint of the file); `--resume` continues
//   after it. SIGINT/SIGTERM finish the batch in flight, write the checkpoint and exit 130.
// - A bad record is reported with its line number and field paths. `--max-errors N` (default 0): stop
//   at the (N+1)-th bad record, with the checkpoint just before it; below that, bad records are skipped.
// - Exit codes: 0 all imported; 2 finished with skipped bad records; 1 stopped (too many bad records, a
//   changed file, Kafka unavailable, …); 130 interrupted.
import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ImportLineHeader, type ImportType } from '../../schemas/catalog.ts';
import { toNumericId } from '../../schemas/fields.ts';
import {
  type FieldIssue,
  formatPath,
  normalizeB2bCatalog,
  normalizeCollection,
  normalizeContent,
  normalizeInventoryLevel,
  normalizeMetaobject,
  normalizeOrder,
  normalizePrice,
  normalizeProduct,
  marketPriceListId,
  quoteBigIntegers,
} from './normalize.ts';
import { type OutRecord, out, type WriteResult } from './writer.ts';
import { z } from 'zod';

export interface LineError {
  line: number;
  message: string;
  issues: FieldIssue[];
}

export interface ImportProgress {
  bytes: number;
  totalBytes: number;
  line: number;
  produced: number;
}

export interface ImportOptions {
  storeId: string;
  file: string;
  writer: { write(records: OutRecord[]): Promise<WriteResult> };
  /** continue after the checkpoint's last committed line */
  resume?: boolean;
  /** ignore (and replace) an existing checkpoint */
  restart?: boolean;
  /** bad records tolerated before stopping (default 0) */
  maxErrors?: number;
  /** records per produce call (default 500) */
  batchSize?: number;
  signal?: AbortSignal;
  onProgress?(p: ImportProgress): void;
  onError?(e: LineError): void;
  /** updated_at for records without one (default: now) */
  now?: string;
}

export interface ImportSummary {
  status: 'completed' | 'stopped' | 'interrupted';
  /** why the import stopped (status `stopped`) */
  reason?: string;
  /** line the import started after (0 = from the beginning) */
  resumedFrom: number;
  /** last line committed (everything up to it is in Kafka or reported) */
  lastLine: number;
  records: number;
  produced: number;
  stale: number;
  errors: LineError[];
  checkpoint: string;
}

export class ImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportError';
  }
}

interface Checkpoint {
  format: 'catalog-import-checkpoint';
  version: 1;
  store_id: string;
  file: string;
  size: number;
  head_sha256: string;
  last_line: number;
  records: number;
  updated_at: string;
}

export function checkpointPath(file: string): string {
  return `${file}.checkpoint`;
}

function headHash(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return createHash('sha256').update(buf.subarray(0, n)).digest('hex');
  } finally {
    closeSync(fd);
  }
}

function writeCheckpoint(file: string, cp: Checkpoint) {
  const target = checkpointPath(file);
  const tmp = `${target}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(cp, null, 2)}\n`);
  renameSync(tmp, target);
}

// ------------------------------------------------------------------------------------------------
// one line → records

const lineIssue = (message: string, path = '(line)'): FieldIssue[] => [{ path, message }];

const PriceDeleteRef = z.object({
  price_list_id: z.string().trim().min(1).max(200).nullish(),
  market: z.string().trim().min(1).max(64).nullish(),
  variant_id: z
    .union([z.string(), z.number()])
    .transform(String)
    .pipe(z.string().regex(/^\d{1,20}$/)),
});

/** The records one import object stands for. */
export function recordsForImport(
  storeId: string,
  obj: unknown,
  now: string,
): { ok: true; records: OutRecord[] } | { ok: false; issues: FieldIssue[] } {
  const h = ImportLineHeader.safeParse(obj);
  if (!h.success)
    return { ok: false, issues: h.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })) };
  const type: ImportType = h.data.type;
  const opts = { source: 'import' as const, now };
  if (h.data.deleted) {
    const idOf = (o: unknown) => toNumericId((o as { id?: unknown }).id);
    const id = idOf(obj);
    switch (type) {
      case 'product':
      case 'collection':
      case 'article':
      case 'page': {
        if (!id) return { ok: false, issues: lineIssue('a deletion needs a numeric id', 'id') };
        if (type === 'product') return { ok: true, records: [out.productDeleted(storeId, id)] };
        if (type === 'collection') return { ok: true, records: out.collectionDeleted(storeId, id) };
        return { ok: true, records: [out.contentDeleted(storeId, type, id)] };
      }
      case 'inventory_level': {
        const r = normalizeInventoryLevel(storeId, obj, opts);
        if (!r.ok) return r;
        return { ok: true, records: [out.inventoryDeleted(storeId, r.value)] };
      }
      case 'price': {
        const r = PriceDeleteRef.safeParse(obj);
        if (!r.success)
          return { ok: false, issues: r.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })) };
        const list = r.data.price_list_id ?? (r.data.market ? marketPriceListId(r.data.market) : undefined);
        if (!list) return { ok: false, issues: lineIssue('needs price_list_id or market', 'price_list_id') };
        return { ok: true, records: [out.priceDeleted(storeId, list, r.data.variant_id)] };
      }
      case 'b2b_catalog': {
        const v = (obj as { id?: unknown }).id;
        if ((typeof v !== 'string' && typeof v !== 'number') || String(v).trim() === '')
          return { ok: false, issues: lineIssue('a deletion needs an id', 'id') };
        return { ok: true, records: [out.b2bCatalogDeleted(storeId, String(v).trim())] };
      }
      case 'metaobject': {
        const mid = toNumericId((obj as { id?: unknown }).id, 'Metaobject');
        if (!mid) return { ok: false, issues: lineIssue('a deletion needs a metaobject id', 'id') };
        return { ok: true, records: [out.metaobjectDeleted(storeId, mid)] };
      }
      case 'order':
        return {
          ok: false,
          issues: lineIssue('orders cannot be deleted; import them with cancelled_at instead', 'deleted'),
        };
    }
  }
  switch (type) {
    case 'product': {
      const r = normalizeProduct(storeId, obj, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.product(r.value.product), ...r.value.inventory.map(out.inventory)] };
    }
    case 'collection': {
      const r = normalizeCollection(storeId, obj, opts);
      if (!r.ok) return r;
      return {
        ok: true,
        records: [out.collection(r.value.collection), ...(r.value.members ? [out.collection(r.value.members)] : [])],
      };
    }
    case 'article':
    case 'page': {
      const r = normalizeContent(storeId, type, obj, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.content(r.value)] };
    }
    case 'inventory_level': {
      const r = normalizeInventoryLevel(storeId, obj, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.inventory(r.value)] };
    }
    case 'price': {
      const r = normalizePrice(storeId, obj, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.pricing(r.value)] };
    }
    case 'b2b_catalog': {
      const r = normalizeB2bCatalog(storeId, obj, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.pricing(r.value)] };
    }
    case 'order': {
      const r = normalizeOrder(storeId, obj, opts);
      if (!r.ok) return r;
      return { ok: true, records: r.value ? [out.order(r.value)] : [] };
    }
    case 'metaobject': {
      // `type` names the line; the metaobject's own type is `metaobject_type`
      const r = normalizeMetaobject(storeId, { ...(obj as object), type: undefined }, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.metaobject(r.value)] };
    }
  }
}

// ------------------------------------------------------------------------------------------------
// reading the file: JSON Lines, or one JSON array (element → its first line)

interface Item {
  line: number;
  /** bytes of the file consumed up to and including this item */
  bytes: number;
  parsed: { ok: true; value: unknown } | { ok: false; message: string };
}

function firstNonSpace(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(4096);
    for (let pos = 0; ; ) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n === 0) return '';
      const m = /\S/.exec(buf.subarray(0, n).toString('utf8'));
      if (m) return m[0];
      pos += n;
    }
  } finally {
    closeSync(fd);
  }
}

async function* jsonLines(file: string, startAfter: number): AsyncGenerator<Item> {
  const rl = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  let line = 0;
  let bytes = 0;
  for await (const text of rl) {
    line++;
    bytes += Buffer.byteLength(text) + 1;
    if (line <= startAfter || text.trim() === '') continue;
    let parsed: Item['parsed'];
    try {
      parsed = { ok: true, value: JSON.parse(quoteBigIntegers(text)) };
    } catch (err) {
      parsed = { ok: false, message: `not valid JSON: ${(err as Error).message}` };
    }
    yield { line, bytes, parsed };
  }
}

/** Start offsets of the top-level elements of a JSON array text (string- and nesting-aware). */
export function arrayElementStarts(text: string): number[] {
  const starts: number[] = [];
  let depth = 0;
  let inString = false;
  let expectValue = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === ' ' || c === '\n' || c === '\r' || c === '\t') continue;
    if (depth === 1 && expectValue && c !== ']') {
      starts.push(i);
      expectValue = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      depth++;
      if (depth === 1) expectValue = true;
    } else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 1) expectValue = true;
  }
  return starts;
}

async function* jsonArray(file: string, startAfter: number): AsyncGenerator<Item> {
  const text = readFileSync(file, 'utf8');
  let all: unknown;
  try {
    all = JSON.parse(quoteBigIntegers(text));
  } catch (err) {
    throw new ImportError(
      `${file} starts with "[" but is not a valid JSON array: ${(err as Error).message} (use JSON Lines to skip bad records)`,
    );
  }
  if (!Array.isArray(all)) throw new ImportError(`${file} is not a JSON array`);
  const starts = arrayElementStarts(text);
  // line number of each element's first character
  const lineAt: number[] = [];
  let line = 1;
  let j = 0;
  for (let i = 0; i < text.length && j < starts.length; i++) {
    while (j < starts.length && starts[j] === i) {
      lineAt.push(line);
      j++;
    }
    if (text.charCodeAt(i) === 10) line++;
  }
  const total = Buffer.byteLength(text);
  for (let k = 0; k < all.length; k++) {
    const l = lineAt[k] ?? k + 1;
    if (l <= startAfter) continue;
    const end = k + 1 < starts.length ? starts[k + 1] : text.length;
    yield {
      line: l,
      bytes: Math.min(total, Buffer.byteLength(text.slice(0, end))),
      parsed: { ok: true, value: all[k] },
    };
  }
}

// ------------------------------------------------------------------------------------------------
// the import

export async function runImport(opts: ImportOptions): Promise<ImportSummary> {
  const file = path.resolve(opts.file);
  if (!existsSync(file)) throw new ImportError(`no such file: ${file}`);
  const size = statSync(file).size;
  const head = headHash(file);
  const cpFile = checkpointPath(file);
  const maxErrors = Math.max(0, opts.maxErrors ?? 0);
  const batchSize = Math.max(1, opts.batchSize ?? 500);
  const now = opts.now ?? new Date().toISOString();

  let startAfter = 0;
  let recordsBefore = 0;
  if (existsSync(cpFile) && !opts.restart) {
    let cp: Checkpoint;
    try {
      cp = JSON.parse(readFileSync(cpFile, 'utf8')) as Checkpoint;
    } catch (err) {
      throw new ImportError(`unreadable checkpoint ${cpFile}: ${(err as Error).message}; pass --restart to start over`);
    }
    if (!opts.resume) {
      throw new ImportError(
        `a checkpoint exists (${cpFile}, line ${cp.last_line}): pass --resume to continue after it or --restart to start over`,
      );
    }
    if (cp.store_id !== opts.storeId)
      throw new ImportError(`the checkpoint belongs to store ${cp.store_id}, not ${opts.storeId}`);
    if (cp.size !== size || cp.head_sha256 !== head)
      throw new ImportError(
        `${file} changed since the checkpoint was written; pass --restart to import it from the beginning`,
      );
    startAfter = cp.last_line;
    recordsBefore = cp.records;
  }

  const summary: ImportSummary = {
    status: 'completed',
    resumedFrom: startAfter,
    lastLine: startAfter,
    records: recordsBefore,
    produced: 0,
    stale: 0,
    errors: [],
    checkpoint: cpFile,
  };
  const progress: ImportProgress = { bytes: 0, totalBytes: size, line: startAfter, produced: 0 };

  let pending: OutRecord[] = [];
  let pendingLast = startAfter;
  const flush = async () => {
    if (pending.length) {
      const res = await opts.writer.write(pending);
      summary.produced += res.produced;
      summary.stale += res.stale.length;
      summary.records += pending.length;
      pending = [];
    }
    if (pendingLast > summary.lastLine) {
      summary.lastLine = pendingLast;
      writeCheckpoint(file, {
        format: 'catalog-import-checkpoint',
        version: 1,
        store_id: opts.storeId,
        file: path.basename(file),
        size,
        head_sha256: head,
        last_line: summary.lastLine,
        records: summary.records,
        updated_at: new Date().toISOString(),
      });
    }
    progress.produced = summary.produced;
    opts.onProgress?.({ ...progress });
  };

  const items = firstNonSpace(file) === '[' ? jsonArray(file, startAfter) : jsonLines(file, startAfter);
  for await (const item of items) {
    if (opts.signal?.aborted) {
      summary.status = 'interrupted';
      break;
    }
    progress.bytes = item.bytes;
    progress.line = item.line;
    const built = item.parsed.ok
      ? recordsForImport(opts.storeId, item.parsed.value, now)
      : { ok: false as const, issues: lineIssue(item.parsed.message) };
    if (!built.ok) {
      const e: LineError = {
        line: item.line,
        message: built.issues.map((i) => `${i.path}: ${i.message}`).join('; '),
        issues: built.issues,
      };
      summary.errors.push(e);
      opts.onError?.(e);
      if (summary.errors.length > maxErrors) {
        // commit everything before the bad line; a resume starts with it
        await flush();
        summary.status = 'stopped';
        summary.reason = `more than ${maxErrors} bad record${maxErrors === 1 ? '' : 's'} (line ${item.line})`;
        return summary;
      }
      pendingLast = item.line;
      continue;
    }
    pending.push(...built.records);
    pendingLast = item.line;
    if (pending.length >= batchSize) await flush();
    else if (item.line % 1000 === 0) opts.onProgress?.({ ...progress });
  }
  await flush();
  if (summary.status === 'completed') {
    progress.bytes = size;
    opts.onProgress?.({ ...progress });
    rmSync(cpFile, { force: true });
  }
  return summary;
}

// ------------------------------------------------------------------------------------------------
// progress display

/** The part of a cli-progress bar the import command uses. */
export interface ProgressBar {
  start(total: number, startValue: number, payload?: Record<string, unknown>): void;
  update(current: number, payload?: Record<string, unknown>): void;
  stop(): void;
}

/**
 * The import command's terminal display: the bar follows `onProgress`; a bad record's line is printed
 * above it (the bar is stopped, the line written, the bar started again) and the bar is redrawn where it
 * was — same position, same line and record counts — not from 0.
 */
export function importProgressDisplay(bar: ProgressBar, out: { write(text: string): unknown }, totalBytes: number) {
  const total = Math.max(totalBytes, 1);
  let value = 0;
  let payload = { line: 0, produced: 0 };
  return {
    start() {
      bar.start(total, value, payload);
    },
    onProgress(p: ImportProgress) {
      value = p.bytes;
      payload = { line: p.line, produced: p.produced };
      bar.update(value, payload);
    },
    onError(e: LineError) {
      bar.stop();
      out.write(`line ${e.line}: ${e.message}\n`);
      payload = { ...payload, line: e.line };
      bar.start(total, value, payload);
    },
    stop() {
      bar.stop();
    },
  };
}
