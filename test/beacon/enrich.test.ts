// Server-side enrichment: client IP behind trusted proxies, geo, User-Agent → device/browser/OS/bot, channel.
import { describe, expect, it } from 'vitest';
import {
  clientIp,
  deviceTypeFromUserAgent,
  geoFromIp,
  inferChannel,
  normalizeIp,
  parseTrustedProxies,
  parseUserAgent,
} from '../../services/common/enrich.ts';

const UA = {
  iphone:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  ipad: 'Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1',
  chrome:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  androidWebView:
    'Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A.230805.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/118.0.0.0 Mobile Safari/537.36',
};

describe('User-Agent enrichment', () => {
  it('classifies iPhone, iPad, desktop Chrome and Googlebot', () => {
    expect(parseUserAgent(UA.iphone)).toEqual({
      device_type: 'mobile',
      browser: 'Mobile Safari',
      os: 'iOS',
      is_bot: false,
    });
    expect(parseUserAgent(UA.ipad)).toEqual({
      device_type: 'tablet',
      browser: 'Mobile Safari',
      os: 'iOS',
      is_bot: false,
    });
    expect(parseUserAgent(UA.chrome)).toEqual({
      device_type: 'desktop',
      browser: 'Chrome',
      os: 'Windows',
      is_bot: false,
    });
    expect(parseUserAgent(UA.googlebot)).toMatchObject({ device_type: 'bot', is_bot: true });
  });

  it('treats a missing User-Agent as a bot and derives device_type for request events', () => {
    expect(parseUserAgent(undefined)).toMatchObject({ device_type: 'bot', is_bot: true });
    expect(deviceTypeFromUserAgent('')).toBe('bot');
    expect(deviceTypeFromUserAgent(UA.iphone)).toBe('mobile');
    expect(deviceTypeFromUserAgent(UA.chrome)).toBe('desktop');
  });

  it('returns the same answer from its cache', () => {
    const a = parseUserAgent(UA.chrome);
    expect(parseUserAgent(UA.chrome)).toBe(a);
  });
});

describe('channel inference', () => {
  it('uses X-Requested-With (tapcart/fuego) and in-app WebView User-Agents', () => {
    expect(inferChannel('com.tapcart.app', UA.iphone)).toBe('app');
    expect(inferChannel('co.fuego.shop', UA.iphone)).toBe('app');
    expect(inferChannel('XMLHttpRequest', UA.chrome)).toBe('web');
    expect(inferChannel(undefined, UA.androidWebView)).toBe('app');
    expect(inferChannel(undefined, UA.iphone)).toBe('web');
  });
});

describe('client IP and geo', () => {
  const trusted = parseTrustedProxies('127.0.0.0/8, ::1/128, 10.0.0.0/8');

  it('believes X-Forwarded-For only from a trusted peer, walking past trusted hops', () => {
    expect(clientIp('127.0.0.1', '81.2.69.142', trusted)).toBe('81.2.69.142');
    expect(clientIp('::ffff:127.0.0.1', '81.2.69.142', trusted)).toBe('81.2.69.142');
    // spoofed left part: the client-controlled entry before the first untrusted hop is ignored
    expect(clientIp('127.0.0.1', '1.1.1.1, 81.2.69.142, 10.1.2.3', trusted)).toBe('81.2.69.142');
    // an untrusted peer's header is ignored
    expect(clientIp('203.0.113.9', '81.2.69.142', trusted)).toBe('203.0.113.9');
    // garbage stops the walk at the last address we can vouch for
    expect(clientIp('127.0.0.1', 'not-an-ip', trusted)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', undefined, trusted)).toBe('127.0.0.1');
  });

  it('normalizes addresses', () => {
    expect(normalizeIp('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(normalizeIp('[2001:db8::1]')).toBe('2001:db8::1');
    expect(normalizeIp('fe80::1%eth0')).toBe('fe80::1');
    expect(normalizeIp('nope')).toBeNull();
  });

  it('rejects malformed trusted-proxy lists', () => {
    expect(() => parseTrustedProxies('10.0.0.0/33')).toThrow(/prefix/);
    expect(() => parseTrustedProxies('example.com')).toThrow(/not an IP/);
  });

  it('resolves geo from geoip-lite (city lower-cased) and nothing for private addresses', () => {
    expect(geoFromIp('81.2.69.142')).toEqual({
      country: 'GB',
      region: 'ENG',
      city: expect.stringMatching(/^[a-z ]+$/),
    });
    expect(geoFromIp('24.48.0.1')).toEqual({ country: 'CA', region: 'QC', city: 'montreal' });
    expect(geoFromIp('127.0.0.1')).toEqual({ country: null, region: null, city: null });
    expect(geoFromIp(null)).toEqual({ country: null, region: null, city: null });
  });
});
