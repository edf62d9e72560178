import pino, { type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout; every service names itself with `service`. */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { service, pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}
