// `npm run replay` (streams/replay/cli.ts) refuses bad arguments before it talks to anything: the
// process exits with EX_USAGE (64) and a message naming the flag at fault. Run as a child process with
// this Node; nothing listens at the configured addresses, so a run that got past the checks would fail
// differently (exit 69, cannot reach the app).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseFrom } from '../../streams/replay/http.ts';
import { REPO } from './helpers.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-replay-cli-'));

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [path.join(REPO, 'streams/replay/cli.ts'), ...args], {
    cwd: REPO,
    // port 9 (discard) on loopback: nothing answers there
    env: {
      ...process.env,
      DATA_DIR: dir,
      HTTP_PORT: '9',
      HOST: '127.0.0.1',
      STREAMS_REPLAY_TOKEN: 'x'.repeat(32),
      CLICKHOUSE_URL: '',
      LOG_LEVEL: 'warn',
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe('replay CLI argument errors', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a --from that is neither earliest, a time nor offsets exits 64 naming --from', () => {
    for (const bad of ['yesterday', '0:', '0:12,1', 'a:1', '12', '2026-13-45T00:00:00Z']) {
      const r = cli(['--processor', 'events', '--from', bad]);
      expect({ bad, code: r.code, stderr: r.stderr.trim() }).toEqual({
        bad,
        code: 64,
        stderr: "--from: expected 'earliest', an ISO 8601 time or partition offsets like 0:120,1:98",
      });
    }
  });

  it('an unknown --processor exits 64 naming --processor and the known ones', () => {
    const r = cli(['--processor', 'nope', '--from', 'earliest']);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(
      /^--processor: unknown processor "nope"; known: events, requests, orders, rejected, catalog_products/,
    );
  });

  it('valid arguments get past the checks (here: to the unreachable app, exit 69)', () => {
    const r = cli(['--processor', 'orders', '--from', '0:5,1:7', '--no-swap']);
    expect(r.code).toBe(69);
    expect(r.stderr).toMatch(/^cannot reach the app at http:\/\/127\.0\.0\.1:9/);
  });

  it('parseFrom reads partition offsets, times and earliest', () => {
    expect(parseFrom(' 0:120,1:98 ')).toEqual({
      kind: 'offsets',
      offsets: new Map([
        [0, 120n],
        [1, 98n],
      ]),
    });
    expect(parseFrom('earliest')).toEqual({ kind: 'earliest' });
    expect(parseFrom('2026-11-01T00:00:00Z')).toEqual({ kind: 'time', ms: Date.UTC(2026, 10, 1) });
  });
});
