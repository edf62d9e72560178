// Geo from IP over geoip-lite's data (GeoLite2: country, region, city), held in a third of the memory.
//
// geoip-lite keeps its three data files in memory as they are on disk: 24 bytes per IPv4 range (first,
// last, location, latitude, longitude, accuracy), 48 per IPv6 range, 88 per location (country, region,
// metro code, EU flag, time zone, city) — 109 MB, for fields of which the enrichment reads three. This
// table is built from the same files at load (≈ 0.5 s) and keeps what a lookup needs:
//   - IPv4: the start of each run of addresses that share a location, and that location (adjacent
//     ranges of one location merged, a gap between ranges a run without one): 8 bytes per run, 3.3 M
//     ranges → 2.4 M runs;
//   - IPv6: every range's bounds as geoip-lite compares them (their first 64 bits) and its location, 20
//     bytes per range. Many ranges share those 64 bits, so which one answers depends on the path of
//     geoip-lite's binary search, which this table repeats step for step;
//   - per location, country, region and city as bytes, 51 per location.
// 33 MB in all against geoip-lite's 109 (a process loading it: RSS +49 MiB against +110; a lookup 1.2 µs
// against 2.1). Answers equal geoip-lite's `lookup` (its private IPv4 ranges and the bounds of its data
// included): test/beacon/geo-table.test.ts compares the two at the bounds of a sample of ranges, their
// neighbours and random addresses. geoip-lite still parses the address strings (its `utils`), so both
// read an address the same way. The data files' layout is geoip-lite's (pinned version): a change of it
// fails that test, or the size checks at load.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import path from 'node:path';

const require = createRequire(import.meta.url);

/** Where an address is; each field null when unknown. */
export interface Geo {
  /** ISO 3166-1 alpha-2, upper case */
  country: string | null;
  /** subdivision code (ISO 3166-2 suffix), upper case */
  region: string | null;
  /** city name, lower case (as the reference product stores it) */
  city: string | null;
}

export const NO_GEO: Geo = Object.freeze({ country: null, region: null, city: null });

interface GeoipUtils {
  aton4(a: string): number;
  aton6(a: string): number[];
}

/** geoip-lite's location id for "no location" (also marks a gap between ranges here) */
const NONE = 0xffffffff;
const V4_RECORD = 24;
const V6_RECORD = 48;
const LOCATION_RECORD = 88;
/** per location kept: country (2 bytes), region (3), city (46) */
const PLACE = 51;
/** geoip-lite answers no location for these (its `privateRange4`) */
const PRIVATE_V4: [number, number][] = [
  [0x0a000000, 0x0affffff],
  [0xac100000, 0xac1fffff],
  [0xc0a80000, 0xc0a8ffff],
];

/** the text of `buf[start, end)` up to its first NUL (geoip-lite's `bufstr`) */
function text(buf: Buffer, start: number, end: number): string {
  const nul = buf.indexOf(0, start);
  return buf.toString('utf8', start, nul >= start && nul < end ? nul : end);
}

/** IPv4 runs of one location: `starts` ascending, `locs[i]` from `starts[i]` on */
interface Runs {
  starts: Uint32Array;
  locs: Uint32Array;
  /** the data's first and last address (beyond them: no location) */
  first: number;
  last: number;
}

/** Merges the ranges of the IPv4 data file into runs. Ranges must be ascending and disjoint. */
function buildRuns(buf: Buffer): Runs {
  const n = tableLength(buf, V4_RECORD);
  // two passes: count the runs, then fill arrays of that length
  const pass = (emit: (i: number, start: number, loc: number) => void): number => {
    let count = 0;
    let prevLast = -1;
    let prevLoc = -1;
    for (let i = 0; i < n; i++) {
      const o = i * V4_RECORD;
      const first = buf.readUInt32BE(o);
      const loc = buf.readUInt32BE(o + 8);
      if (i > 0 && first <= prevLast) throw new Error(`geo data: IPv4 range ${i} overlaps the one before`);
      if (i > 0 && first !== prevLast + 1) {
        emit(count++, prevLast + 1, NONE);
        prevLoc = NONE;
      }
      if (loc !== prevLoc) {
        emit(count++, first, loc);
        prevLoc = loc;
      }
      prevLast = buf.readUInt32BE(o + 4);
    }
    return count;
  };
  const count = pass(() => {});
  const starts = new Uint32Array(count);
  const locs = new Uint32Array(count);
  pass((i, start, loc) => {
    starts[i] = start;
    locs[i] = loc;
  });
  return { starts, locs, first: buf.readUInt32BE(0), last: buf.readUInt32BE((n - 1) * V4_RECORD + 4) };
}

/** the location of an IPv4 address, NONE outside the data */
function locate4(runs: Runs, ip: number): number {
  if (ip < runs.first || ip > runs.last) return NONE;
  const { starts, locs } = runs;
  // the last run starting at or below the address
  let a = 0;
  let b = starts.length - 1;
  while (a < b) {
    const m = (a + b + 1) >>> 1;
    if (starts[m] <= ip) a = m;
    else b = m - 1;
  }
  return locs[a];
}

/** IPv6 ranges: bounds as (hi, lo) 32-bit halves of their first 64 bits, in file order */
interface Ranges {
  firstHi: Uint32Array;
  firstLo: Uint32Array;
  lastHi: Uint32Array;
  lastLo: Uint32Array;
  locs: Uint32Array;
}

function buildRanges(buf: Buffer): Ranges {
  const n = tableLength(buf, V6_RECORD);
  const r: Ranges = {
    firstHi: new Uint32Array(n),
    firstLo: new Uint32Array(n),
    lastHi: new Uint32Array(n),
    lastLo: new Uint32Array(n),
    locs: new Uint32Array(n),
  };
  for (let i = 0; i < n; i++) {
    const o = i * V6_RECORD;
    r.firstHi[i] = buf.readUInt32BE(o);
    r.firstLo[i] = buf.readUInt32BE(o + 4);
    r.lastHi[i] = buf.readUInt32BE(o + 16);
    r.lastLo[i] = buf.readUInt32BE(o + 20);
    r.locs[i] = buf.readUInt32BE(o + 32);
  }
  return r;
}

/** (hi, lo) against (h2, l2): -1, 0, 1 (geoip-lite's `cmp6`) */
const cmp64 = (hi: number, lo: number, h2: number, l2: number) =>
  hi < h2 ? -1 : hi > h2 ? 1 : lo < l2 ? -1 : lo > l2 ? 1 : 0;

/** geoip-lite's `lookup6` search, step for step (ranges sharing their first 64 bits make the path matter) */
function locate6(r: Ranges, hi: number, lo: number): number {
  let fline = 0;
  let cline = r.locs.length - 1;
  if (cmp64(hi, lo, r.lastHi[cline], r.lastLo[cline]) > 0 || cmp64(hi, lo, r.firstHi[0], r.firstLo[0]) < 0) return NONE;
  for (;;) {
    const line = (fline + cline) >>> 1;
    const below = cmp64(r.firstHi[line], r.firstLo[line], hi, lo);
    const above = cmp64(r.lastHi[line], r.lastLo[line], hi, lo);
    if (below <= 0 && above >= 0) return r.locs[line];
    if (fline === cline) return NONE;
    if (fline === cline - 1) {
      if (line === fline) fline = cline;
      else cline = fline;
    } else if (below > 0) cline = line;
    else if (above < 0) fline = line;
  }
}

function tableLength(buf: Buffer, record: number): number {
  const n = buf.length / record;
  if (!Number.isInteger(n) || n === 0) throw new Error(`geo data: ${buf.length} bytes is not a table of ${record}`);
  return n;
}

export class GeoTable {
  private readonly v4: Runs;
  private readonly v6: Ranges;
  private readonly places: Buffer;
  private readonly utils: GeoipUtils;

  /** from geoip-lite's data files (its package's `data/` unless `dir` is given) */
  constructor(dir?: string) {
    const pkg = path.dirname(require.resolve('geoip-lite/package.json'));
    const data = dir ?? path.join(pkg, 'data');
    this.utils = require(path.join(pkg, 'lib', 'utils.js')) as GeoipUtils;
    this.v4 = buildRuns(readFileSync(path.join(data, 'geoip-city.dat')));
    this.v6 = buildRanges(readFileSync(path.join(data, 'geoip-city6.dat')));
    const names = readFileSync(path.join(data, 'geoip-city-names.dat'));
    const count = names.length / LOCATION_RECORD;
    this.places = Buffer.alloc(count * PLACE);
    for (let i = 0; i < count; i++) {
      const o = i * LOCATION_RECORD;
      names.copy(this.places, i * PLACE, o, o + 5);
      names.copy(this.places, i * PLACE + 5, o + 42, o + LOCATION_RECORD);
    }
  }

  /** bytes held (the typed arrays and the location table) */
  get byteLength(): number {
    const v6 = this.v6;
    return (
      this.v4.starts.byteLength +
      this.v4.locs.byteLength +
      [v6.firstHi, v6.firstLo, v6.lastHi, v6.lastLo, v6.locs].reduce((sum, a) => sum + a.byteLength, 0) +
      this.places.byteLength
    );
  }

  /** Geo of an address as geoip-lite's `lookup` gives it (all-null where that gives null or no location). */
  lookup(ip: string): Geo {
    const version = isIP(ip);
    let loc = NONE;
    if (version === 4) loc = this.lookup4(this.utils.aton4(ip));
    else if (version === 6) {
      const mapped = mappedV4(ip);
      if (mapped !== null) loc = this.lookup4(this.utils.aton4(mapped));
      else {
        const [hi, lo] = this.utils.aton6(ip);
        loc = locate6(this.v6, hi, lo);
      }
    }
    if (loc === NONE || (loc + 1) * PLACE > this.places.length) return NO_GEO;
    const o = loc * PLACE;
    const city = text(this.places, o + 5, o + PLACE);
    return {
      country: text(this.places, o, o + 2) || null,
      region: text(this.places, o + 2, o + 5) || null,
      city: city ? city.toLowerCase() : null,
    };
  }

  private lookup4(ip: number): number {
    for (const [from, to] of PRIVATE_V4) if (ip >= from && ip <= to) return NONE;
    return locate4(this.v4, ip);
  }
}

/** the IPv4 address of an IPv4-mapped IPv6 address, as geoip-lite recognises one (`get4mapped`) */
function mappedV4(ip: string): string | null {
  const upper = ip.toUpperCase();
  for (const prefix of ['0:0:0:0:0:FFFF:', '::FFFF:']) if (upper.startsWith(prefix)) return upper.slice(prefix.length);
  return null;
}
