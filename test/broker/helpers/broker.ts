// Test helpers: an in-process broker on a free port over a temporary data dir.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createKafka, type Kafka } from '../../../services/common/kafka/index.ts';
import { type Broker, type BrokerOptions, startBroker } from '../../../services/kafka-broker/index.ts';
import { memoryLogStore } from './memory-store.ts';

export const REPO = path.resolve(import.meta.dirname, '../../..');
export const NODE = path.join(REPO, 'node_modules/.bin/node');

export async function tmpDir(prefix = 'broker-test-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/**
 * A kafkajs client through the platform's Kafka layer (services/common/kafka: its kafkajs swaps, among
 * them the request-queue fix without which stock kafkajs 2.2.4 arms a timer of about -Date.now() ms and
 * Node prints a TimeoutNegativeWarning), with kafkajs' own timeouts and retries unless `extra` sets them;
 * client logs are silent.
 */
export function testKafka(brokers: string[], clientId = 'test', extra: Parameters<typeof createKafka>[3] = {}): Kafka {
  return createKafka(brokers, clientId, pino({ level: 'silent' }), {
    connectionTimeout: 1_000,
    requestTimeout: 30_000,
    retry: {},
    ...extra,
  });
}

export interface TestBroker extends Broker {
  dataDir: string;
  brokers: string[];
  kafka(clientId?: string): Kafka;
  stop(): Promise<void>;
}

export async function startTestBroker(opts: Partial<BrokerOptions> = {}): Promise<TestBroker> {
  const dataDir = opts.dataDir ?? (await tmpDir());
  const broker = await startBroker({
    port: 0,
    logger: pino({ level: process.env.BROKER_TEST_LOG ?? 'warn' }),
    groupOptions: { initialRebalanceDelayMs: 100 },
    // BROKER_TEST_MEMORY=1 runs the wire tests against an in-memory log (no storage layer)
    logStore: process.env.BROKER_TEST_MEMORY ? memoryLogStore() : undefined,
    ...opts,
    dataDir,
  });
  const brokers = [`127.0.0.1:${broker.port}`];
  return {
    ...broker,
    dataDir,
    brokers,
    kafka: (clientId = 'test') => testKafka(brokers, clientId),
    async stop() {
      await broker.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs `node services/kafka-broker/main.ts` and resolves once it logged "broker listening". */
export function spawnBroker(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; port: number; logs: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [path.join(REPO, 'services/kafka-broker/main.ts')], {
      env: { ...process.env, BROKER_PORT: '0', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs: string[] = [];
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`broker did not start:\n${logs.join('\n')}`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        logs.push(line);
        try {
          const rec = JSON.parse(line);
          if (rec.msg === 'broker listening') {
            clearTimeout(timer);
            resolve({ child, port: rec.port, logs });
          }
        } catch {
          // not JSON
        }
      }
    });
    child.stderr!.on('data', (d: Buffer) => logs.push(d.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code}:\n${logs.join('\n')}`));
    });
  });
}
