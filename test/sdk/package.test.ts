// The SDK as a package (services/sdk/package.json, name storefront-sdk): a storefront project next to the
// repository depends on it by path — `"storefront-sdk": "file:<repo>/services/sdk"`, which npm installs as
// a symlink in node_modules — imports it by name, runs it with Node's type stripping and type-checks it
// with the SDK's own types (a browser project: DOM library, no Node types).
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { SDK_NAME, SDK_VERSION } from '../../services/sdk/index.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const SDK_DIR = path.join(ROOT, 'services/sdk');
const project = mkdtempSync(path.join(os.tmpdir(), 'sdk-consumer-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));

const CONSUMER = `import { type Product, type Result, createClient, createTracker, SDK_NAME, SDK_VERSION } from 'storefront-sdk';

const client = createClient({ token: 't', baseUrl: 'http://127.0.0.1:9' });
const r: Result<{ sortOrders: unknown[] }> = await client.sortOrders();
const first: Product | undefined = (await client.browse('apparel')).data?.results[0];
// @ts-expect-error a collection handle is a string (unused if the package had no types: a tsc error)
void client.browse(42);
const t = createTracker({ token: 't', baseUrl: 'http://127.0.0.1:9' });
const e = t.track('autocomplete', { query: 'x' });
console.log(JSON.stringify({ client: \`\${SDK_NAME}/\${SDK_VERSION}\`, code: r.error?.code, first: first ?? null, id: e.event_id }));
`;

describe('SDK package', () => {
  it('is named and versioned as the SDK names itself in X-SDK-Client', () => {
    const pkg = JSON.parse(readFileSync(path.join(SDK_DIR, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      exports: Record<string, unknown>;
    };
    expect(pkg.name).toBe(SDK_NAME);
    expect(pkg.version).toBe(SDK_VERSION);
    expect(pkg.exports['.']).toEqual({ types: './index.ts', default: './index.ts' });
  });

  it('is imported by name from a project that depends on it by path, runs, and type-checks', async () => {
    writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ type: 'module', private: true, dependencies: { 'storefront-sdk': `file:${SDK_DIR}` } }),
    );
    mkdirSync(path.join(project, 'node_modules'));
    symlinkSync(SDK_DIR, path.join(project, 'node_modules/storefront-sdk'), 'dir');
    writeFileSync(path.join(project, 'consumer.ts'), CONSUMER);
    writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2024',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          lib: ['es2024', 'dom'],
          types: [],
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
          verbatimModuleSyntax: true,
          skipLibCheck: true,
        },
        files: ['consumer.ts'],
      }),
    );

    const { stdout } = await run(process.execPath, ['consumer.ts'], { cwd: project });
    expect(JSON.parse(stdout)).toMatchObject({
      client: `${SDK_NAME}/${SDK_VERSION}`,
      code: 'network_error',
      first: null,
      id: expect.stringMatching(/^[0-9A-Z]{26}$/),
    });

    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    const checked = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }),
    );
    expect(checked.out).toBe('');
    expect(checked.code).toBe(0);
  }, 180_000);
});
