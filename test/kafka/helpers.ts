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

export async function startTestKafka(
  brokers = 1,
  properties: Record<string, string> = {},
  opts: { dataDir?: string; heapMb?: number } = {},
): Promise<TestKafka> {
  const dataDir = opts.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'apache-kafka-test-')));
  const ports = await freePorts(brokers * 2);
  const logPath = path.join(dataDir, 'kafka.log');
  const log = createWriteStream(logPath, { flags: 'a' });
  const cluster = await startKafkaCluster({
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
