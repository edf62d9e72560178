// Apache Kafka for tests: a KRaft cluster started with the project's launcher (deploy/kafka/cluster.ts; the
// jars are fetched from Maven Central on the first run and cached) on free ports over a temporary data
// directory. Its log goes to <dataDir>/kafka.log (KAFKA_TEST_LOG=1 prints it).
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type KafkaCluster, startKafkaCluster } from '../../deploy/kafka/cluster.ts';
import { freePorts } from '../../deploy/local/stack.ts';

export interface TestKafka extends KafkaCluster {
  dataDir: string;
  logPath: string;
  close(): Promise<void>;
}

/**
 * A node that exits during start-up is most often a port race: the ports are free when chosen and the
 * test files running beside this one take ports too. Such a start is retried on other ports in a fresh
 * directory (twice at most); the error names the node's last error lines.
 */
export async function startTestKafka(
  brokers = 1,
  properties: Record<string, string> = {},
  opts: { dataDir?: string; heapMb?: number } = {},
): Promise<TestKafka> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(brokers, properties, opts);
    } catch (err) {
      if (opts.dataDir || attempt >= 3 || !/exited during start-up/.test((err as Error).message)) throw err;
      process.stderr.write(`Apache Kafka start-up failed, retrying on other ports: ${(err as Error).message}\n`);
    }
  }
}

async function startOnce(
  brokers: number,
  properties: Record<string, string>,
  opts: { dataDir?: string; heapMb?: number },
): Promise<TestKafka> {
  const dataDir = opts.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'apache-kafka-test-')));
  const ports = await freePorts(brokers * 2);
  const logPath = path.join(dataDir, 'kafka.log');
  const log = createWriteStream(logPath, { flags: 'a' });
  let cluster: KafkaCluster;
  try {
    cluster = await startKafkaCluster({
      brokers,
      ports: ports.slice(0, brokers),
      controllerPorts: ports.slice(brokers),
      dataDir,
      heapMb: opts.heapMb,
      properties,
      output: (node, line) => {
        log.write(`[${node}] ${line}\n`);
        if (process.env.KAFKA_TEST_LOG) process.stderr.write(`[${node}] ${line}\n`);
      },
    });
  } catch (err) {
    log.end();
    if (!opts.dataDir) await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    ...cluster,
    dataDir,
    logPath,
    async close() {
      await cluster.stop();
      log.end();
      if (!opts.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
