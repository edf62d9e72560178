// The launcher's restart policy (`npm start`), from environment variables: how often a crashed child
// (Redis, the broker, the app) is started again before the launcher gives up. See docs/development.md
// § Supervision.
import { z } from 'zod';
import { ConfigError } from '../../services/common/config.ts';
import type { RestartPolicy } from './stack.ts';

/** the launcher's exit code when a component crashed too often (sysexits EX_UNAVAILABLE) */
export const EXIT_GAVE_UP = 69;

const ms = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

const LauncherEnvSchema = z.object({
  /** crashes of one component within LAUNCHER_CRASH_WINDOW_MS after which the launcher stops everything
   *  (1: never restart, stop at the first crash) */
  LAUNCHER_MAX_CRASHES: z.coerce.number().int().min(1).default(5),
  LAUNCHER_CRASH_WINDOW_MS: ms(10 * 60_000),
  /** delay before a restart, doubled for each further crash of that component within the window */
  LAUNCHER_BACKOFF_MS: ms(1_000),
  LAUNCHER_MAX_BACKOFF_MS: ms(30_000),
});

export function loadRestartPolicy(env: NodeJS.ProcessEnv = process.env): RestartPolicy {
  const parsed = LauncherEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({
        variable: String(i.path[0] ?? '(environment)'),
        message: `${i.message} (got ${JSON.stringify(env[String(i.path[0])])})`,
      })),
    );
  }
  const e = parsed.data;
  return {
    maxCrashes: e.LAUNCHER_MAX_CRASHES,
    windowMs: e.LAUNCHER_CRASH_WINDOW_MS,
    backoffMs: e.LAUNCHER_BACKOFF_MS,
    maxBackoffMs: Math.max(e.LAUNCHER_BACKOFF_MS, e.LAUNCHER_MAX_BACKOFF_MS),
  };
}
