// Request header v0/v1/v2 and response header v0/v1.
import type { ApiDef } from './api.ts';
import type { Reader } from './reader.ts';
import type { Writer } from './writer.ts';

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** Reads api key, version and correlation id (the part every header version shares). */
export function readHeaderPrefix(r: Reader): RequestHeader {
  const apiKey = r.int16();
  const apiVersion = r.int16();
  const correlationId = r.int32();
  return { apiKey, apiVersion, correlationId, clientId: null };
}

/** Reads the rest of the header: client id (v1+) and tagged fields (v2, flexible versions). */
export function readHeaderRest(r: Reader, h: RequestHeader, flexible: boolean): void {
  h.clientId = r.nullableString(false);
  if (flexible) r.taggedFields();
}

export function isFlexible(api: ApiDef<unknown, unknown>, version: number): boolean {
  return version >= api.flexibleFrom;
}

/** Response header v1 (tagged fields) for flexible versions, except ApiVersions which always uses v0. */
export function writeResponseHeader(w: Writer, api: ApiDef<unknown, unknown>, h: RequestHeader): void {
  w.int32(h.correlationId);
  if (api.key !== 18 && isFlexible(api, h.apiVersion)) w.tags(true);
}
