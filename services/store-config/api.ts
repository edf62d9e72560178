// The contract every service uses to resolve a storefront access token to a store and to read that
// store's configuration. Implemented by the store-config projection (this folder), which consumes the
// compacted `stores.config.v1` topic into memory; a change written by the admin CLI is visible within 1 s.
//
// Tokens are never stored: the directory keeps SHA-256 hashes and compares them in constant time.
//
// In the app process, modules get the running directory with `storeDirectory(ctx)` from
// services/store-config/module.ts. The configuration kinds and their payloads are in schemas/config.ts.
import type { ConfigKind, ConfigPayload } from '../../schemas/config.ts';

export type StoreStatus = 'active' | 'suspended';

export interface StoreRecord {
  storeId: string;
  name: string;
  status: StoreStatus;
  /** primary market code and the market application mode */
  primaryMarket: string | null;
  marketMode: 'strict' | 'pricing_only' | 'ignore';
  /** autocomplete regional mode: per-country suggestions with store-wide fallback, or one set for all */
  autocompleteMode: 'per_region' | 'global';
  /** image preload (Link header) settings of the store */
  mediaPreloads: { enabled: boolean; srcsetSizes: number[]; rewriteDomain: string | null; rewriteUrls: boolean };
  /** brand description for autocomplete curation (≤ 2000 characters) */
  brandPrompt: string | null;
  /** search serves a redirect to a plain collection page inline */
  inlineCollectionRedirects: boolean;
  /** ISO 8601 */
  createdAt: string;
}

/** One applied change (see `onChange`). */
export interface ConfigChange {
  storeId: string;
  kind: ConfigKind;
  itemId: string;
  deleted: boolean;
  /** Kafka offset of the record */
  offset: string;
}

export type AuthResult =
  | { ok: true; store: StoreRecord }
  | { ok: false; status: 401 | 402; code: 'missing_token' | 'invalid_token' | 'store_suspended'; message: string };

export interface StoreDirectory {
  /** token → store; 401 when missing or unknown, 402 when the store is suspended */
  authenticate(token: string | undefined | null): AuthResult;
  getStore(storeId: string): StoreRecord | undefined;
  /** the full typed configuration of one kind for a store (sort orders, blocks, synonyms, …); see schemas/config.ts */
  getConfig<K extends string>(storeId: string, kind: K): unknown[];
  /** resolves once the projection has caught up with everything written before the call */
  ready(): Promise<void>;
  /** every live item of a kind, typed and validated, ordered by item id (expired previews left out) */
  items<K extends ConfigKind>(storeId: string, kind: K): ConfigPayload<K>[];
  /** one item by its id (sort order code, block ULID, market code, …); undefined when absent or expired */
  item<K extends ConfigKind>(storeId: string, kind: K, itemId: string): ConfigPayload<K> | undefined;
  /** called after each applied change (e.g. to rebuild a per-store index); returns the unsubscribe function */
  onChange(listener: (change: ConfigChange) => void): () => void;
}
