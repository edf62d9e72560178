// AppContext.startInBackground: retried start, readiness while starting and after a failure, shutdown
// that stops retrying and closes what started.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startInBackground } from '../../services/app/background.ts';
import type { Check } from '../../services/app/health.ts';
import { createLogger } from '../../services/common/logger.ts';

function host() {
  const checks: Record<string, Check> = {};
  const closers: (() => Promise<void>)[] = [];
  return {
    logger: createLogger('background-test', 'silent'),
    addReadinessCheck: (name: string, check: Check) => {
      checks[name] = check;
    },
    onClose: (fn: () => Promise<void>) => {
      closers.push(fn);
    },
    ready: (name: string) =>
      Promise.resolve(checks[name]!()).then(
        () => 'ready',
        (err: Error) => err.message,
      ),
    close: async () => {
      for (const fn of closers.reverse()) await fn();
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('startInBackground', () => {
  it('retries a failing start with growing pauses, reports the failure on readiness, then is ready', async () => {
    vi.useFakeTimers();
    const h = host();
    let calls = 0;
    const cleanups: number[] = [];
    const bg = startInBackground(
      h,
      'thing',
      async () => {
        calls++;
        if (calls < 3) throw new Error(`refused ${calls}`);
        return { id: calls };
      },
      { stop: () => {}, afterFailure: () => void cleanups.push(calls) },
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    expect(await h.ready('thing')).toBe('not started: refused 1');
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toBe(1); // first pause: 1 s
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(calls).toBe(2); // second pause: 2 s
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(3);
    expect(bg.up).toBe(true);
    expect(bg.started).toEqual({ id: 3 });
    expect(cleanups).toEqual([1, 2]);
    expect(await h.ready('thing')).toBe('ready');
  });

  it('a start that returns nothing still counts as started', async () => {
    const h = host();
    const stopped: string[] = [];
    const bg = startInBackground(h, 'writer', async () => {}, { stop: () => void stopped.push('writer') });
    await vi.waitFor(() => expect(bg.up).toBe(true));
    expect(await h.ready('writer')).toBe('ready');
    await h.close();
    expect(stopped).toEqual(['writer']);
  });

  it('shutdown during the retries ends them at once and stops nothing that never started', async () => {
    const h = host();
    let calls = 0;
    const stop = vi.fn();
    startInBackground(
      h,
      'never',
      async () => {
        calls++;
        throw new Error('down');
      },
      { stop },
    );
    await vi.waitFor(() => expect(calls).toBe(1));
    const t0 = Date.now();
    await h.close(); // the 1 s pause is cut short
    expect(Date.now() - t0).toBeLessThan(500);
    expect(calls).toBe(1);
    expect(stop).not.toHaveBeenCalled();
    expect(await h.ready('never')).toBe('not started: down');
  });
});
