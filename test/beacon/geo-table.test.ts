// The compacted geo table (services/common/geo-table.ts) against geoip-lite's own lookup, its reference:
// the same country, region and city for every address probed — each bound of a sample of the data's
// ranges and its neighbours, random addresses, IPv4-mapped IPv6, private and reserved addresses.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Geo, GeoTable } from '../../services/common/geo-table.ts';
import { rng as prng } from '../streams/helpers.ts';

const require = createRequire(import.meta.url);
const DATA = path.join(path.dirname(require.resolve('geoip-lite/package.json')), 'data');

interface GeoipLite {
  lookup(ip: string): { country?: string; region?: string; city?: string } | null;
}

/** geoip-lite's answer as the enrichment reads it (the normalisation enrich.ts applied before the table) */
function reference(geoip: GeoipLite, ip: string): Geo {
  const r = geoip.lookup(ip);
  return r
    ? { country: r.country || null, region: r.region || null, city: r.city ? r.city.toLowerCase() : null }
    : { country: null, region: null, city: null };
}

const v4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
/** an IPv6 address from its first 64 bits (hi, lo) and a last word */
const v6 = (hi: number, lo: number, tail = 0) =>
  [hi >>> 16, hi & 0xffff, lo >>> 16, lo & 0xffff, 0, 0, 0, tail].map((w) => w.toString(16)).join(':');

describe('the compacted geo table', () => {
  let geoip: GeoipLite;
  let table: GeoTable;
  beforeAll(() => {
    geoip = require('geoip-lite') as GeoipLite;
    table = new GeoTable();
  });

  /** the addresses where the two disagree (empty = equal everywhere probed) */
  const disagreements = (ips: string[]) =>
    ips
      .map((ip) => ({ ip, table: table.lookup(ip), geoipLite: reference(geoip, ip) }))
      .filter((d) => JSON.stringify(d.table) !== JSON.stringify(d.geoipLite));

  it('answers as geoip-lite at the bounds of IPv4 ranges, one address either side, and at random addresses', () => {
    const buf = readFileSync(path.join(DATA, 'geoip-city.dat'));
    const n = buf.length / 24;
    const rnd = prng(4);
    const ips: string[] = [];
    for (let k = 0; k < 20_000; k++) {
      const i = k < 10 ? k : k < 20 ? n - 1 - (k - 10) : Math.floor(rnd() * n);
      const first = buf.readUInt32BE(i * 24);
      const last = buf.readUInt32BE(i * 24 + 4);
      for (const a of [first - 1, first, first + 1, last - 1, last, last + 1])
        if (a >= 0 && a <= 0xffffffff) ips.push(v4(a));
      ips.push(v4(Math.floor(rnd() * 0x100000000)));
    }
    expect(disagreements(ips)).toEqual([]);
    // the probe reached real places, not only the no-location answers both would give on a broken table
    expect(ips.filter((ip) => table.lookup(ip).city !== null).length).toBeGreaterThan(50_000);
  });

  it('answers as geoip-lite at the bounds of IPv6 ranges and inside them', () => {
    const buf = readFileSync(path.join(DATA, 'geoip-city6.dat'));
    const n = buf.length / 48;
    const rnd = prng(6);
    const ips: string[] = [];
    for (let k = 0; k < 10_000; k++) {
      const i = k < 5 ? k : k < 10 ? n - 1 - (k - 5) : Math.floor(rnd() * n);
      const o = i * 48;
      const [fh, fl, lh, ll] = [
        buf.readUInt32BE(o),
        buf.readUInt32BE(o + 4),
        buf.readUInt32BE(o + 16),
        buf.readUInt32BE(o + 20),
      ];
      ips.push(v6(fh, fl), v6(fh, fl, 0xffff), v6(lh, ll), v6(lh, ll, 1));
      if (fl > 0) ips.push(v6(fh, fl - 1, 0xffff));
      if (ll < 0xffffffff) ips.push(v6(lh, ll + 1));
    }
    expect(disagreements(ips)).toEqual([]);
    expect(ips.filter((ip) => table.lookup(ip).country !== null).length).toBeGreaterThan(20_000);
  });

  it('answers as geoip-lite for IPv4-mapped IPv6, private, loopback, reserved and malformed addresses', () => {
    const ips = [
      '81.2.69.142',
      '::ffff:81.2.69.142',
      '0:0:0:0:0:FFFF:81.2.69.142',
      '::FFFF:24.48.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '127.0.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      '2001:db8::1',
      '2a00:1450:4001:81b::200e',
      'not-an-ip',
      '1.2.3',
      '',
    ];
    expect(disagreements(ips)).toEqual([]);
    expect(table.lookup('24.48.0.1')).toEqual({ country: 'CA', region: 'QC', city: 'montreal' });
  });

  it('holds the data in under a third of the bytes geoip-lite keeps', () => {
    const files = ['geoip-city.dat', 'geoip-city6.dat', 'geoip-city-names.dat'];
    const raw = files.reduce((sum, f) => sum + readFileSync(path.join(DATA, f)).length, 0);
    expect(table.byteLength).toBeLessThan(raw / 3);
  });
});
