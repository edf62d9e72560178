// Cluster id: generated once per data dir and kept in <dataDir>/meta.properties (as Kafka does).
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export async function loadClusterId(dataDir: string, nodeId: number): Promise<string> {
  await mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, 'meta.properties');
  try {
    const text = await readFile(file, 'utf8');
    const m = /^cluster\.id=(.+)$/m.exec(text);
    if (m) return m[1].trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const id = randomBytes(16).toString('base64url');
  await writeFile(
    file,
    `# written by the embedded Kafka-protocol broker\nversion=1\ncluster.id=${id}\nnode.id=${nodeId}\n`,
  );
  return id;
}
