// Completes package-lock.json with the other platforms' optional native packages.
//
// The npm registry these machines reach serves only this platform's native packages (e.g.
// @biomejs/cli-linux-x64) and answers 404 for the others (…-darwin-arm64, …-win32-x64). npm then
// writes a lockfile without them, and `npm ci` refuses that lockfile as "out of sync". This script adds
// an entry for every missing optional platform package, with the os/cpu/libc read from its name, so
// `npm ci` sees a complete lockfile and skips those packages as foreign-platform ones.
// Run it after every `npm install` that changes dependencies: `node deploy/lockfile-platforms.ts`.
import { readFileSync, writeFileSync } from 'node:fs';

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  optionalDependencies?: Record<string, string>;
}

const OS = ['darwin', 'linux', 'win32', 'android', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'aix'];
const CPU = ['x64', 'arm64', 'arm', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64', 'wasm32'];

function platformOf(name: string): Pick<LockEntry, 'os' | 'cpu' | 'libc'> | undefined {
  const parts = name.split('/').pop()!.split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.find((p) => CPU.includes(p));
  if (!os || !cpu) return undefined;
  const libc = parts.includes('musl')
    ? ['musl']
    : parts.includes('gnu') || parts.includes('glibc')
      ? ['glibc']
      : undefined;
  return { os: [os], cpu: [cpu], ...(libc ? { libc } : {}) };
}

const file = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(file, 'utf8')) as { packages: Record<string, LockEntry> };
let added = 0;
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [dep, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${path ? `${path}/` : ''}node_modules/${dep}`;
    if (lock.packages[nested] || lock.packages[`node_modules/${dep}`]) continue;
    const platform = platformOf(dep);
    if (!platform) continue; // not a platform package: npm resolves it normally
    if (!/^\d+\.\d+\.\d+/.test(range)) {
      throw new Error(`${dep}@${range}: only exact versions can be filled in (required by ${path || 'the root'})`);
    }
    lock.packages[`node_modules/${dep}`] = {
      version: range,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...platform,
    };
    added++;
  }
}
if (added) {
  lock.packages = Object.fromEntries(
    Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
  );
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
}
process.stdout.write(
  `lockfile-platforms: ${added} foreign-platform optional package entr${added === 1 ? 'y' : 'ies'} added\n`,
);
