// Runs schemathesis (PyPI, pinned, in node_modules/.cache/schemathesis/venv: installed on first use, warmed by
// .ci/run) against an
// OpenAPI document of the running stack and sums its JSON report: requests sent, 5xx answers, failed
// checks by code. Used by test/stack/hostile-schemathesis.test.ts (short run in `npm test`, the 10 000-request
// run with `npm run test:hostile`).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SCHEMATHESIS_VERSION = '4.32.5';
export const SCHEMATHESIS_BIN = path.join(ROOT, 'node_modules/.cache/schemathesis/venv/bin/schemathesis');

/** The checks the reliability goal names: no 5xx, responses as documented (schema, status, content type). */
export const CHECKS = [
  'not_a_server_error',
  'response_schema_conformance',
  'status_code_conformance',
  'content_type_conformance',
];

export interface SchemathesisRun {
  /** test cases schemathesis generated (each is one request, coverage cases included) */
  generated: number;
  /** failures by code (ST101 …) with the operations they were found on */
  failures: { code: string; title: string; count: number; operations: string[] }[];
  /** schemathesis' own errors (a crash of the tool, not of the API) */
  errors: { title: string; count: number }[];
  exitCode: number;
  output: string;
  seconds: number;
}

export function schemathesisInstalled(): boolean {
  return existsSync(SCHEMATHESIS_BIN);
}

/**
 * Install the pinned schemathesis into its venv when missing (as deploy/kafka/fetch.ts fetches Kafka), so
 * `npm test` works on a fresh clone with Python 3 and pip; .ci/run warms the same venv.
 */
export function ensureSchemathesis(): void {
  if (schemathesisInstalled()) return;
  const venv = path.dirname(path.dirname(SCHEMATHESIS_BIN));
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 600_000 });
    if (r.status !== 0)
      throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr?.slice(-2000) ?? ''}`);
  };
  run('python3', ['-m', 'venv', venv]);
  run(path.join(venv, 'bin/pip'), [
    'install',
    '-q',
    '--disable-pip-version-check',
    `schemathesis==${SCHEMATHESIS_VERSION}`,
  ]);
}

export async function runSchemathesis(opts: {
  schemaUrl: string;
  headers?: Record<string, string>;
  /** examples per operation in the fuzzing phase */
  maxExamples: number;
  /** schemathesis phases (default: fuzzing) */
  phases?: string[];
  seed?: number;
  /** extra CLI arguments (--include-path-regex …) */
  args?: string[];
  timeoutMs?: number;
}): Promise<SchemathesisRun> {
  const reportDir = mkdtempSync(path.join(os.tmpdir(), 'st-report-'));
  const args = [
    'run',
    opts.schemaUrl,
    ...Object.entries(opts.headers ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]),
    '--max-examples',
    String(opts.maxExamples),
    '--phases',
    (opts.phases ?? ['fuzzing']).join(','),
    '--checks',
    CHECKS.join(','),
    '--seed',
    String(opts.seed ?? 1),
    // one worker: schemathesis' coverage phase trips a CPython 3.11 AST race with several
    '--workers',
    '1',
    '--no-color',
    '--generation-database',
    'none',
    '--request-timeout',
    '30',
    '--report',
    'json',
    '--report-dir',
    reportDir,
    ...(opts.args ?? []),
  ];
  const started = Date.now();
  // run in the report directory: schemathesis keeps a `.schemathesis/` state directory in its working directory
  const child = spawn(SCHEMATHESIS_BIN, args, { cwd: reportDir, env: { ...process.env, NO_COLOR: '1' } });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const timer = setTimeout(() => child.kill('SIGTERM'), opts.timeoutMs ?? 30 * 60_000);
  const exitCode: number = await new Promise((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  clearTimeout(timer);
  const file = readdirSync(reportDir).find((f) => f.startsWith('json-'));
  if (!file) throw new Error(`schemathesis wrote no report (exit ${exitCode}):\n${output.slice(-4000)}`);
  const report = JSON.parse(readFileSync(path.join(reportDir, file), 'utf8')) as {
    test_cases: { generated: number };
    failures: SchemathesisRun['failures'];
    errors: SchemathesisRun['errors'];
  };
  return {
    generated: report.test_cases.generated,
    failures: report.failures,
    errors: report.errors,
    exitCode,
    output,
    seconds: (Date.now() - started) / 1000,
  };
}

/** The app's resident memory, from its own /metrics (prom-client's process collector). */
export async function appRssBytes(httpUrl: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const m = /^process_resident_memory_bytes (\d+(?:\.\d+)?(?:e\+\d+)?)$/m.exec(text);
  if (!m) throw new Error('process_resident_memory_bytes missing from /metrics');
  return Number(m[1]);
}
