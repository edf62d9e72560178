// Starts bench/hello-world.ts (a bare Fastify process) on a port and waits until it listens: the baseline
// the HTTP benchmarks measure next to their endpoint, or the baseline plus a given piece of work (`env`).
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

export async function helloWorld(port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(import.meta.dirname, 'hello-world.ts')], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('hello-world server did not start')), 15_000);
    child.once('exit', (code) => reject(new Error(`hello-world server exited (${code})`)));
    child.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('listening')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return child;
}
