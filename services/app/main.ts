// Entry point of the app process (started by deploy/local/start.ts, or on its own in distributed mode).
import { loadConfigOrExit } from '../common/config.ts';
import { startApp } from './app.ts';
import { modules } from './modules.ts';

const config = loadConfigOrExit();
const app = await startApp(config, modules).catch((err) => {
  process.stderr.write(`app failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
app.ctx.logger.info({ urls: app.urls }, 'app ready');
process.send?.({ type: 'ready', urls: app.urls });

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    app.ctx.logger.info({ signal: sig }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
// the launcher went away without a signal (e.g. kill -9): do not linger
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
