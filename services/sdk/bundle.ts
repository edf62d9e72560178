// Builds the browser bundle of the SDK from its TypeScript source with esbuild: one minified ES module,
// no dependencies (the schemas are imported as types only). Built once per process, on first request.
import path from 'node:path';
import { build } from 'esbuild';

const ENTRY = path.join(import.meta.dirname, 'index.ts');

let cached: Promise<string> | undefined;

/** the SDK as one ES module (minified); memoized */
export function sdkBundle(): Promise<string> {
  cached ??= bundleModule(ENTRY).catch((err) => {
    cached = undefined;
    throw err;
  });
  return cached;
}

/**
 * Bundles an entry file into one minified ES module for browsers. `external` maps an import specifier
 * (as written in the source) to the URL the browser loads it from instead of inlining it.
 */
export async function bundleModule(entry: string, external: Record<string, string> = {}): Promise<string> {
  const out = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    legalComments: 'none',
    plugins: [
      {
        name: 'external-urls',
        setup(b) {
          b.onResolve({ filter: /.*/ }, (args) =>
            args.path in external ? { path: external[args.path], external: true } : undefined,
          );
        },
      },
    ],
  });
  const text = out.outputFiles[0]?.text;
  if (!text) throw new Error(`esbuild produced nothing for ${entry}`);
  return text;
}
