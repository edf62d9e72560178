// Worker-thread entry of the demo load (started by services/demo/module.ts). Receives the resolved
// configuration, the demo state and the app's address; a `stop` message aborts the run at the next
// step boundary (every phase is resumable, see services/demo/generator/runner.ts).
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../../common/config.ts';
import { createLogger } from '../../common/logger.ts';
import type { DemoState } from './load.ts';
import { runDemoLoad } from './runner.ts';

export interface DemoWorkerData {
  config: Config;
  state: DemoState;
  listenUrl: string;
}

export type DemoWorkerMessage = { type: 'done' } | { type: 'failed'; error: string } | { type: 'stopped' };

const data = workerData as DemoWorkerData;
const log = createLogger('app', data.config.LOG_LEVEL).child({ module: 'demo' });
const abort = new AbortController();
parentPort?.on('message', (m: { type?: string }) => {
  if (m?.type === 'stop') abort.abort(new Error('stopped'));
});

// Every phase is idempotent and resumes from the saved progress, so a transient failure (Kafka or the
// app slow under load, a timeout) is retried here with a growing pause instead of waiting for a restart.
const MAX_ATTEMPTS = 6;
for (let attempt = 1; ; attempt++) {
  try {
    await runDemoLoad({
      config: data.config,
      state: data.state,
      listenUrl: data.listenUrl,
      logger: log,
      signal: abort.signal,
    });
    parentPort?.postMessage({ type: 'done' } satisfies DemoWorkerMessage);
    break;
  } catch (err) {
    if (abort.signal.aborted) {
      parentPort?.postMessage({ type: 'stopped' } satisfies DemoWorkerMessage);
      break;
    }
    const e = err as Error;
    if (attempt >= MAX_ATTEMPTS) {
      log.error(
        { err: e.message, stack: e.stack, attempt },
        'demo: loading the demo store failed; the next start resumes where it stopped',
      );
      parentPort?.postMessage({ type: 'failed', error: e.message } satisfies DemoWorkerMessage);
      break;
    }
    const pauseMs = 2_000 * 2 ** (attempt - 1);
    log.warn(
      { err: e.message, attempt, retryInMs: pauseMs, progress: data.state.progress },
      'demo: a loading step failed; retrying from the saved progress',
    );
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, pauseMs);
      abort.signal.addEventListener('abort', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}
// let the log lines flush, then leave (open sockets and the port listener must not keep the thread alive;
// process.exit in a worker ends only this thread)
setTimeout(() => process.exit(0), 200);
