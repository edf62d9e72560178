// Server-side enrichment shared by the beacon (engagement events) and the read API (request events):
// client IP behind trusted proxies, geo from IP (geoip-lite's data, compacted by geo-table.ts), device type /
// browser / OS from the User-Agent (ua-parser-js 1.x), the bot flag (isbot) and the shopping channel (app vs web).
//
// Nothing here trusts the client: X-Forwarded-For is honoured only when the direct peer is a
// configured trusted proxy, and the caller overwrites any enrichment fields a client sent.
import { createRequire } from 'node:module';
import { BlockList, isIP } from 'node:net';
import { isbot } from 'isbot';
import { type Geo, GeoTable, NO_GEO } from './geo-table.ts';

const require = createRequire(import.meta.url);

// ---------------------------------------------------------------- User-Agent

export type DeviceType = 'mobile' | 'tablet' | 'desktop' | 'bot';

export interface UserAgentInfo {
  device_type: DeviceType;
  /** browser family, e.g. "Chrome", "Mobile Safari"; null when unknown */
  browser: string | null;
  /** operating system family, e.g. "iOS", "Windows"; null when unknown */
  os: string | null;
  is_bot: boolean;
}

/** the part of ua-parser-js 1.x we use (the package ships no types for 1.x) */
interface UAResult {
  browser: { name?: string };
  os: { name?: string };
  device: { type?: string };
}
type UAParserFn = (ua: string) => UAResult;

let uaParser: UAParserFn | undefined;
function parseUa(ua: string): UAResult {
  uaParser ??= (require('ua-parser-js') as { UAParser: UAParserFn }).UAParser;
  return uaParser(ua);
}

/** ua-parser-js costs ~50–150 µs per string; User-Agents repeat heavily, so keep a small LRU. */
const UA_CACHE_MAX = 2_000;
const uaCache = new Map<string, UserAgentInfo>();
const MAX_UA_LENGTH = 512;

/**
 * Device type, browser, OS and bot flag from a User-Agent. Bots win over device type; ua-parser's
 * `mobile`/`wearable` → mobile, `tablet` → tablet, `smarttv`/`console`/`embedded`/none → desktop.
 * A missing User-Agent is treated as a bot: every real browser sends one.
 */
export function parseUserAgent(userAgent: string | undefined | null): UserAgentInfo {
  const ua = (userAgent ?? '').slice(0, MAX_UA_LENGTH);
  const hit = uaCache.get(ua);
  if (hit) {
    // refresh recency
    uaCache.delete(ua);
    uaCache.set(ua, hit);
    return hit;
  }
  let info: UserAgentInfo;
  if (ua.trim() === '') {
    info = { device_type: 'bot', browser: null, os: null, is_bot: true };
  } else {
    const r = parseUa(ua);
    const bot = isbot(ua);
    const t = r.device.type;
    const device: DeviceType = bot
      ? 'bot'
      : t === 'mobile' || t === 'wearable'
        ? 'mobile'
        : t === 'tablet'
          ? 'tablet'
          : 'desktop';
    info = { device_type: device, browser: r.browser.name ?? null, os: r.os.name ?? null, is_bot: bot };
  }
  info = Object.freeze(info);
  uaCache.set(ua, info);
  if (uaCache.size > UA_CACHE_MAX) uaCache.delete(uaCache.keys().next().value as string);
  return info;
}

/** `mobile` | `tablet` | `desktop` | `bot` from a User-Agent (request events carry this, never the raw UA). */
export function deviceTypeFromUserAgent(userAgent: string | undefined | null): DeviceType {
  return parseUserAgent(userAgent).device_type;
}

// ---------------------------------------------------------------- channel

export type Channel = 'web' | 'app';

const APP_WRAPPERS = /tapcart|fuego/i;
// Android WebView marks itself with "; wv)"; in-app browsers of the big social apps name themselves.
const APP_UA = /; wv\)|tapcart|fuego|FBAN|FBAV|Instagram|\bLine\//i;

/**
 * The shopping channel when the client did not send one: `X-Requested-With` naming a mobile-app
 * wrapper (Tapcart, Fuego) → app; an in-app WebView User-Agent → app; otherwise web.
 */
export function inferChannel(requestedWith: string | undefined | null, userAgent: string | undefined | null): Channel {
  if (requestedWith && APP_WRAPPERS.test(requestedWith)) return 'app';
  if (userAgent && APP_UA.test(userAgent)) return 'app';
  return 'web';
}

// ---------------------------------------------------------------- client IP

/** Parse a comma-separated list of CIDRs or addresses ("127.0.0.1/8, ::1, 10.0.0.0/8") into a BlockList. */
export function parseTrustedProxies(spec: string | readonly string[]): BlockList {
  const list = new BlockList();
  const items = typeof spec === 'string' ? spec.split(',') : spec;
  for (const raw of items) {
    const item = raw.trim();
    if (!item) continue;
    const [addr, bits] = item.split('/');
    const family = isIP(addr);
    if (family === 0) throw new Error(`not an IP address or CIDR: ${JSON.stringify(item)}`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(addr, type);
    else {
      const prefix = Number(bits);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) {
        throw new Error(`bad prefix length in ${JSON.stringify(item)}`);
      }
      list.addSubnet(addr, prefix, type);
    }
  }
  return list;
}

/** Strip the IPv4-mapped IPv6 prefix and any zone id: "::ffff:1.2.3.4" → "1.2.3.4". */
export function normalizeIp(ip: string | undefined | null): string | null {
  if (!ip) return null;
  let s = ip.trim();
  if (s.startsWith('[') && s.includes(']')) s = s.slice(1, s.indexOf(']'));
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (s.toLowerCase().startsWith('::ffff:') && isIP(s.slice(7)) === 4) s = s.slice(7);
  return isIP(s) ? s : null;
}

function isTrusted(list: BlockList, ip: string): boolean {
  return list.check(ip, isIP(ip) === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The client's address. X-Forwarded-For is read only when the direct peer is a trusted proxy; it is
 * then walked right to left, skipping trusted hops, and the first untrusted address is the client
 * (the left part of the header is client-controlled and never believed past an untrusted hop).
 */
export function clientIp(
  peer: string | undefined | null,
  forwardedFor: string | string[] | undefined,
  trusted: BlockList,
): string | null {
  const direct = normalizeIp(peer);
  if (!direct || !forwardedFor || !isTrusted(trusted, direct)) return direct;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  let client = direct;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeIp(hops[i]);
    if (!hop) break; // garbage in the chain: stop at the last address we could vouch for
    client = hop;
    if (!isTrusted(trusted, hop)) break;
  }
  return client;
}

// ---------------------------------------------------------------- geo

export type { Geo } from './geo-table.ts';

let geoTable: GeoTable | undefined;
/** Load the geo table (geoip-lite's data, compacted: ≈ 0.5 s, 33 MB; geo-table.ts). Called at start-up so
 *  the first request does not pay it. */
export function loadGeoDatabase(): void {
  geoTable ??= new GeoTable();
}

/** Geo of an IP address (GeoLite2 through geoip-lite's data); private, loopback and unknown addresses give all-null. */
export function geoFromIp(ip: string | null | undefined): Geo {
  if (!ip) return NO_GEO;
  loadGeoDatabase();
  return (geoTable as GeoTable).lookup(ip);
}
