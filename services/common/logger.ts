import pino, { type DestinationStream, type Logger } from 'pino';
import { type PrettyOptions, prettyFactory } from 'pino-pretty';

export type { Logger };

/** how pino-pretty shows a line: time, level, the service (or the broker's `name`), the message, fields */
export const PRETTY_OPTIONS: PrettyOptions = {
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,service,name',
  messageFormat: '{if service}{service}: {end}{if name}{name}: {end}{msg}',
  singleLine: true,
};

/**
 * Whether log lines on this stream are human-readable: LOG_FORMAT=pretty, or `auto` (the default) on a
 * terminal. JSON when the stream is not a terminal (files, pipes, the stack launcher, log collectors) or
 * with LOG_FORMAT=json.
 */
export function prettyLogs(stream: { isTTY?: boolean } = process.stdout, format = process.env.LOG_FORMAT): boolean {
  if (format === 'json') return false;
  if (format === 'pretty') return true;
  return stream.isTTY === true;
}

/** A function turning one JSON log line into its readable form (non-JSON lines pass through). */
export function prettyLine(colorize = true): (line: string) => string {
  return prettyFactory({ ...PRETTY_OPTIONS, colorize });
}

/** Structured logs on stdout (readable on a terminal, see prettyLogs); every service names itself with `service`. */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  const opts = { level, base: { service, pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  if (!prettyLogs()) return pino(opts);
  const pretty = prettyLine(process.stdout.isTTY === true);
  const stream: DestinationStream = { write: (line: string) => void process.stdout.write(pretty(line)) };
  return pino(opts, stream);
}
