// The admin CLI's argument handling, as a child process, without Kafka: help, flag validation (exit 2,
// the flag named), environment validation (exit 78), and an unreachable broker (exit 1, a clear message).
// The whole command tree's --help is walked in-process on the program the CLI builds (buildProgram).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { type Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { freePorts } from '../../deploy/local/stack.ts';
import { buildProgram } from '../../services/admin/cli.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const CLI = path.join(ROOT, 'services/admin/cli.ts');

function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      NODE,
      [CLI, ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('admin CLI without a broker', () => {
  it('prints help for the program, a group and a command', async () => {
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    for (const group of [
      'stores',
      'tokens',
      'markets',
      'sort-orders',
      'blocks',
      'merch-rules',
      'previews',
      'search-rules',
      'redirects',
      'synonyms',
      'breakouts',
      'ranking-rules',
      'autocomplete',
      'b2b',
      'webhook-secrets',
      'media-preloads',
      'config',
    ]) {
      expect(top.stdout).toContain(group);
    }
    const group = await cli(['blocks', '--help']);
    expect(group.stdout).toMatch(/put \[options\] <store>/);
    expect(group.stdout).toContain('Examples:');
    const cmd = await cli(['b2b', 'locations', 'put', '--help']);
    expect(cmd.code).toBe(0);
    expect(cmd.stdout).toContain('--gid <gid>');
  });

  it('every command of the tree answers --help with exit 0 and its usage', async () => {
    // [path, command] for the program and every command below it
    const walk = (cmd: Command, prefix: string[]): [string[], Command][] => [
      [prefix, cmd],
      ...cmd.commands.flatMap((c) => walk(c, [...prefix, c.name()])),
    ];
    const tree = walk(buildProgram(), []);
    const paths = tree.map(([p]) => p.join(' '));
    // the tree is what the docs list: every group, and the put/list/get/delete of the item kinds
    expect(paths).toEqual(
      expect.arrayContaining([
        '',
        'stores delete',
        'b2b locations put',
        'webhook-secrets add',
        'media-preloads set',
        'config import',
        'autocomplete brand-prompt',
      ]),
    );
    expect(tree.length).toBeGreaterThan(70);
    for (const [p, cmd] of tree) if (p.length) expect(cmd.description(), p.join(' ')).not.toBe('');

    const captureOutput = (cmd: Command, sink: { out: string; err: string }) => {
      cmd.configureOutput({
        writeOut: (t) => {
          sink.out += t;
        },
        writeErr: (t) => {
          sink.err += t;
        },
      });
      for (const c of cmd.commands) captureOutput(c, sink);
    };
    for (const [p, cmd] of tree) {
      const program = buildProgram();
      const sink = { out: '', err: '' };
      captureOutput(program, sink);
      // main() turns a CommanderError into the process exit code: exitCode 0 → 0
      let code: number | undefined;
      try {
        await program.parseAsync([...p, '--help'], { from: 'user' });
      } catch (err) {
        code = err instanceof CommanderError ? err.exitCode : 1;
      }
      const name = ['admin', ...p].join(' ') || 'admin';
      expect(code, name).toBe(0);
      expect(sink.err, name).toBe('');
      expect(sink.out.split('\n')[0], name).toMatch(/^Usage: /);
      expect(sink.out.split('\n')[0], name).toContain(`Usage: ${name}`);
      // help wraps long descriptions: compare with the whitespace folded
      expect(sink.out.replace(/\s+/g, ' '), name).toContain(cmd.description().replace(/\s+/g, ' '));
    }
  });

  it('rejects bad flag values before connecting, naming the flag', async () => {
    const cases: [string[], string][] = [
      [['blocks', 'put', 's', '--anchor', 'homepage'], "option '--anchor <type>' argument 'homepage' is invalid"],
      [['blocks', 'put', 's', '--max-products', '500'], 'expected an integer from 1 to 100'],
      [['blocks', 'put', 's', '--fallback', 'nope'], 'expected <block ULID>[:replace|fill]'],
      [['media-preloads', 'set', 's', '--srcset-sizes', '360,0'], '"0" is not an integer from 1 to 10000'],
      [['merch-rules', 'put', 's', '--pin', '12'], 'expected <product id>@<position>'],
      [['stores', 'create'], "required option '--name <name>' not specified"],
      [['sort-orders', 'put', 's', '--scope', 'all'], "argument 'all' is invalid"],
      [['no-such-command'], "unknown command 'no-such-command'"],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain(message);
    }
  }, 180_000);

  it('exits 78 naming the variable when the environment is invalid', async () => {
    const r = await cli(['stores', 'list'], { KAFKA_BROKERS: 'not a broker list' });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain('KAFKA_BROKERS');
  });

  it('exits 1 with a clear message when Kafka is unreachable', async () => {
    const [port] = await freePorts(1);
    const r = await cli(['stores', 'list'], { KAFKA_BROKERS: `127.0.0.1:${port}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: Kafka: .*\(brokers: 127\.0\.0\.1:\d+\)/m);
  });
});
