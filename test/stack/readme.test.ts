// Every shell example in README.md works: the ```sh blocks are split into commands (backslash
// continuations joined, comments dropped), the documented defaults are pointed at the test stack (its
// ports, a real store's access token and id) and each command runs through the shell with the stack's
// environment. A curl must exit 0 with a non-error HTTP status and a plausible body (JSON that parses and
// is not an error body; no rejected beacon events); any other command must exit 0. Only the commands in
// SKIPPED do not run, each for the reason given.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stack } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore } from '../helpers/stores.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** commands that do not run here, by how they start */
const SKIPPED: { prefix: string; why: string }[] = [
  { prefix: 'npm ci', why: 'installs the dependencies this test already runs on' },
  { prefix: 'npm start', why: 'starts a second stack on the default ports; the examples run against the test stack' },
  { prefix: 'npm test', why: 'runs the whole suite, this test included' },
  { prefix: 'npm run bench', why: 'minutes of load on a shared machine' },
  { prefix: 'npm run test:soak', why: 'a long fault run' },
  { prefix: 'npm run fault:', why: 'a fault run' },
  {
    prefix: 'npm run replay',
    why: "rebuilds and swaps the shared stack's aggregates under the suites running beside it (the replay has its own tests)",
  },
];

/** The commands of the ```sh blocks: continuation lines joined, comments removed, blank lines dropped. */
function shellExamples(markdown: string): string[] {
  const commands: string[] = [];
  for (const block of markdown.matchAll(/^```(?:sh|bash|shell|console)[^\n]*\n([\s\S]*?)^```/gm)) {
    let current = '';
    let quote: '"' | "'" | null = null;
    for (const line of block[1].split('\n')) {
      // scan for comments and open quotes (a quoted string may span lines)
      let kept = '';
      for (let i = 0; i < line.length; i++) {
        const c = line[i];
        if (quote) {
          if (c === quote) quote = null;
        } else if (c === '"' || c === "'") quote = c;
        else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) break;
        kept += c;
      }
      if (quote) {
        current += `${kept}\n`;
        continue;
      }
      const trimmed = kept.trimEnd();
      if (trimmed.endsWith('\\')) {
        current += `${trimmed.slice(0, -1)} `;
        continue;
      }
      current += kept;
      if (current.trim() !== '') commands.push(current.trim().replace(/\s+$/, ''));
      current = '';
    }
  }
  return commands;
}

function skipReason(command: string): string | undefined {
  // `a && b`: skipped when any part is
  for (const part of command.split(/&&|;/).map((p) => p.trim())) {
    const s = SKIPPED.find((x) => part.startsWith(x.prefix));
    if (s) return `${s.prefix}: ${s.why}`;
  }
  return undefined;
}

const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const COMMANDS = shellExamples(README);
const RUN = COMMANDS.filter((c) => !skipReason(c));

function sh(command: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['-c', command],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let token = '';
let storeId = '';
let scratch = '';

beforeAll(async () => {
  ({ token, storeId } = await createTestStore({ name: 'readme examples' }));
  scratch = mkdtempSync(path.join(os.tmpdir(), 'readme-test-'));
});
afterAll(async () => {
  await closeTestStoreWriter();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** the README's defaults (its configuration table) → the test stack */
function forStack(command: string): string {
  const s = stack();
  const ports: Record<string, string> = {
    [s.env.HTTP_PORT]: '3000',
    [s.env.CLICKHOUSE_HTTP_PORT]: '8123',
    [s.env.SCHEMA_REGISTRY_PORT]: '8081',
    [s.env.KAFKA_PORT]: '9092',
    [s.env.REDIS_PORT]: '6379',
  };
  let out = command;
  for (const [port, documented] of Object.entries(ports)) {
    out = out.replace(new RegExp(`(127\\.0\\.0\\.1|localhost):${documented}\\b`, 'g'), `127.0.0.1:${port}`);
  }
  return out
    .replace(/sfat_…|sfat_\.\.\.|<token>/g, token)
    .replace(/param_store=[^&'"\s]+/g, `param_store=${encodeURIComponent(storeId)}`);
}

describe('README shell examples against the stack', () => {
  it('has examples, and runs every one not skipped by name', () => {
    expect(COMMANDS.length).toBeGreaterThan(0);
    expect(RUN.some((c) => c.startsWith('curl '))).toBe(true);
    for (const c of COMMANDS.filter((x) => skipReason(x)))
      console.log(`README example skipped: ${c}\n  (${skipReason(c)})`);
  });

  it('reads commands as the shell would: continuations joined, comments dropped, quotes kept whole', () => {
    const md = [
      'text',
      '```sh',
      "curl 'http://x/?q=a#b' \\",
      '  -d \'{"k": 1}\'   # a comment',
      '',
      'npm run admin -- stores list  # another',
      "echo 'two",
      "lines' # done",
      '```',
      '```ts',
      'not shell',
      '```',
    ].join('\n');
    expect(shellExamples(md)).toEqual([
      "curl 'http://x/?q=a#b'    -d '{\"k\": 1}'",
      'npm run admin -- stores list',
      "echo 'two\nlines'",
    ]);
  });

  it.for(RUN)('%s', async (example) => {
    const command = forStack(example);
    const env = { ...stack().env, LOG_LEVEL: 'silent' };
    if (/^curl\s/.test(command) && !command.includes('|')) {
      const bodyFile = path.join(scratch, `body-${Math.random().toString(36).slice(2)}`);
      const r = await sh(`${command} --silent --show-error --output '${bodyFile}' --write-out '%{http_code}'`, env);
      const body = (() => {
        try {
          return readFileSync(bodyFile, 'utf8');
        } catch {
          return '';
        }
      })();
      const status = Number(r.stdout.trim());
      expect({ code: r.code, status, stderr: r.stderr }).toMatchObject({ code: 0 });
      expect(status, `HTTP ${status}: ${body.slice(0, 500)}`).toBeGreaterThanOrEqual(200);
      expect(status, `HTTP ${status}: ${body.slice(0, 500)}`).toBeLessThan(400);
      expect(body.trim(), 'an empty body').not.toBe('');
      // JSON (one document, or JSONEachRow lines) must parse and must not be an error body
      const text = body.trim();
      if (text.startsWith('{') || text.startsWith('[')) {
        const docs = (() => {
          try {
            return [JSON.parse(text)];
          } catch {
            return text.split('\n').map((l) => JSON.parse(l));
          }
        })();
        for (const d of docs) {
          expect(d, body.slice(0, 500)).not.toHaveProperty('error');
          if (typeof d === 'object' && d && 'rejected' in d) expect(d.rejected, body.slice(0, 500)).toBe(0);
        }
      }
    } else {
      const r = await sh(command, env);
      expect({ code: r.code, stderr: r.stderr.slice(-2000) }).toMatchObject({ code: 0 });
      expect(r.stdout.trim(), 'no output').not.toBe('');
    }
  });
});
