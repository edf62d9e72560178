// AppContext.startInBackground: start-with-retry for what a module cannot start before the app serves
// (its registry, its consumer groups), with readiness reporting and a shutdown that stops retrying.
import type { Logger } from '../common/logger.ts';
import type { Background, BackgroundOptions } from './context.ts';
import type { Check } from './health.ts';

export function startInBackground<T>(
  host: {
    logger: Logger;
    addReadinessCheck(name: string, check: Check): void;
    onClose(fn: () => Promise<void>): void;
  },
  name: string,
  start: () => Promise<T>,
  opts: BackgroundOptions<T>,
): Background<T> {
  const state: { up: boolean; started: T | undefined } = { up: false, started: undefined };
  let failure: Error | undefined;
  let closing = false;
  let wake: (() => void) | undefined;
  const running = (async () => {
    for (let attempt = 1; !closing; attempt++) {
      try {
        state.started = await start();
        state.up = true;
        failure = undefined;
        return;
      } catch (err) {
        failure = err as Error;
        host.logger.error({ err: failure.message, attempt }, `${name}: start failed; retrying`);
        await opts.afterFailure?.();
        if (closing) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(1_000 * attempt, 10_000)).unref();
        });
      }
    }
  })();
  host.addReadinessCheck(name, async () => {
    if (!state.up) throw new Error(failure ? `not started: ${failure.message}` : 'starting');
  });
  host.onClose(async () => {
    closing = true;
    wake?.();
    await running;
    if (state.up) await opts.stop(state.started as T);
  });
  return state;
}
