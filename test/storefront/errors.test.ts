// The storefront's client errors (services/storefront/errors.ts): a 4xx says what was wrong with the
// request, so it is built without a stack trace (capturing one cost the event loop ~30 µs per rejected
// request); every other error keeps its stack.
import { describe, expect, it } from 'vitest';
import { StorefrontError } from '../../services/storefront/errors.ts';

describe('storefront client errors', () => {
  it('carry status, code, fields and headers but no stack frames; other errors keep theirs', () => {
    const limit = Error.stackTraceLimit;
    const err = new StorefrontError(429, 'rate_limited', 'Too many requests.', [], { 'retry-after': '1' });
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ status: 429, code: 'rate_limited', headers: { 'retry-after': '1' }, fields: [] });
    expect(err.stack).toBe('StorefrontError: Too many requests.');
    expect(Error.stackTraceLimit).toBe(limit);
    expect(new Error('server side').stack?.split('\n').length).toBeGreaterThan(1);
  });
});
