// The coordinator's time: the wall clock (commit timestamps, state timestamps, offset retention) and the
// timers (session, rebalance, initial-delay, pending-member, retention). Injected through
// GroupCoordinatorOptions.clock; the default is the process clock with unref'd timers (a pending timer
// never keeps the process alive).

/** a timer armed by a Clock, passed back to clear it */
export type TimerHandle = object;

export interface Clock {
  /** milliseconds since the epoch */
  now(): number;
  /** runs `fn` once after `ms` (a negative delay counts as 0) */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(timer: TimerHandle): void;
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(timer: TimerHandle): void;
}

/** The process clock. It reads the global timer functions at each call, so vitest's fake timers govern it. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref();
    return t;
  },
  clearTimeout: (t) => clearTimeout(t as NodeJS.Timeout),
  setInterval(fn, ms) {
    const t = setInterval(fn, Math.max(1, ms));
    t.unref();
    return t;
  },
  clearInterval: (t) => clearInterval(t as NodeJS.Timeout),
};
