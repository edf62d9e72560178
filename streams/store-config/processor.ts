// The `store_config` processor: stores.config.v1 (compacted; store configuration as events) → the
// analysts' projection `store_config` (migration 0200; the current state is the view store_config_current).
// One row per record: a write carries its envelope and the item as JSON with secrets redacted
// (webhook secrets, token hashes); a tombstone is a row with deleted = 1. The Kafka offset is the
// ReplacingMergeTree version (one key always lives in one partition), so a replay writes the same rows.
// A record whose envelope or payload does not validate goes to the DLQ with the reason, as it would be
// skipped by every store-config directory (services/store-config/directory.ts) alike.
import {
  CONFIG_SCHEMAS,
  type ConfigKind,
  isConfigKind,
  itemIdOf,
  parseConfigKey,
  StoreConfigEnvelope,
} from '../../schemas/config.ts';
import type { CompareSpec, ParseResult, Processor } from '../runtime/types.ts';
import { zodParse } from '../runtime/util.ts';

type ConfigRecord =
  | { op: 'put'; envelope: StoreConfigEnvelope; value: unknown }
  | { op: 'delete'; storeId: string; kind: ConfigKind; itemId: string };

/** The analysts' copy leaves secrets out: webhook secrets and token hashes. */
export function forAnalysts(kind: ConfigKind, value: unknown): unknown {
  if (kind === 'webhook_secret') return { ...(value as object), secret: '[redacted]' };
  if (kind === 'access_token') return { ...(value as object), sha256: '[redacted]' };
  return value;
}

function parseRecord(raw: unknown): ParseResult<ConfigRecord> {
  const v = raw as Record<string, unknown>;
  // the timestamp-millis logical type may decode to an ISO string; the envelope carries ms
  const writtenAt = typeof v?.written_at === 'string' ? Date.parse(v.written_at) : v?.written_at;
  const env = zodParse(StoreConfigEnvelope, { ...v, written_at: writtenAt });
  if (!env.ok) return env;
  const envelope = env.value as StoreConfigEnvelope;
  if (!isConfigKind(envelope.kind))
    return { ok: false, reason: `unknown config kind ${JSON.stringify(envelope.kind)}` };
  let payload: unknown;
  try {
    payload = JSON.parse(envelope.payload_json);
  } catch {
    return { ok: false, reason: 'payload_json: not JSON' };
  }
  const value = zodParse(CONFIG_SCHEMAS[envelope.kind] as never, payload);
  if (!value.ok) return { ok: false, reason: `payload: ${value.reason}` };
  const itemId = itemIdOf(envelope.kind, value.value as never);
  if (itemId !== envelope.item_id)
    return { ok: false, reason: `payload names item ${itemId}, the envelope ${envelope.item_id}` };
  if (envelope.kind === 'store' && (value.value as { store_id: string }).store_id !== envelope.store_id)
    return { ok: false, reason: 'payload names another store' };
  return { ok: true, value: { op: 'put', envelope, value: value.value } };
}

function parseTombstone(key: Buffer | null): ParseResult<ConfigRecord> {
  const text = key?.toString('utf8') ?? '';
  const ref = text ? parseConfigKey(text) : undefined;
  if (!ref || !isConfigKind(ref.kind))
    return { ok: false, reason: `unrecognised store-config key ${JSON.stringify(text.slice(0, 200))}` };
  return { ok: true, value: { op: 'delete', storeId: ref.storeId, kind: ref.kind, itemId: ref.itemId } };
}

const chTime = (ms: number) => new Date(Number.isFinite(ms) ? ms : 0).toISOString().replace('T', ' ').replace('Z', '');

/** replay compares the current state (FINAL, tombstoned items left out) per store and day of the write */
const CURRENT: CompareSpec = {
  day: 'written_at',
  measure:
    "concat(toString(countIf(deleted = 0)), ' current, checksum ', hex(sumIf(cityHash64(store_id, kind, item_id, version, payload), deleted = 0)))",
  final: true,
};

export const storeConfigProcessor: Processor<ConfigRecord> = {
  name: 'store_config',
  topic: 'storeConfig',
  tables: { written: ['store_config'], views: [], compare: { store_config: CURRENT } },
  parse: parseRecord,
  parseTombstone,
  async process(batch) {
    const rows = batch.map((d) => {
      const r = d.value;
      const position = { partition: d.position.partition, offset: d.position.offset.toString() };
      if (r.op === 'delete') {
        const at = Number.isFinite(d.brokerTime) && d.brokerTime > 0 ? d.brokerTime : 0;
        return {
          store_id: r.storeId,
          kind: r.kind,
          item_id: r.itemId,
          version: '',
          written_at: chTime(at),
          deleted: 1,
          payload: '',
          ...position,
        };
      }
      const e = r.envelope;
      return {
        store_id: e.store_id,
        kind: e.kind,
        item_id: e.item_id,
        version: e.version,
        written_at: chTime(e.written_at),
        deleted: 0,
        payload: JSON.stringify(forAnalysts(e.kind as ConfigKind, r.value)),
        ...position,
      };
    });
    return { writes: [{ table: 'store_config', rows }] };
  },
};
