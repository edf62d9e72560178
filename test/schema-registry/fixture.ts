// A real embedded broker on a temporary directory plus a schema registry on it, for standalone suites.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createKafka, type Kafka } from '../../services/common/kafka/index.ts';
import { type Broker, startBroker } from '../../services/kafka-broker/index.ts';
import { type RunningSchemaRegistry, startSchemaRegistry } from '../../services/schema-registry/index.ts';

export const SR_CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

export interface RegistryFixture {
  broker: Broker;
  brokers: string[];
  kafka: Kafka;
  topic: string;
  registry: RunningSchemaRegistry;
  /** start another registry instance over the same topic */
  startRegistry(): Promise<RunningSchemaRegistry>;
  /** stop the broker, keeping its data (an outage; the registries keep serving what they hold) */
  stopBroker(): Promise<void>;
  /** start the broker again on the same port and data directory (`broker` is then the new one) */
  restartBroker(): Promise<void>;
  close(): Promise<void>;
}

const quiet = pino({ level: process.env.SR_TEST_LOG ?? 'warn' });

export async function startRegistryFixture(topic = '_schemas'): Promise<RegistryFixture> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sr-test-'));
  const start = (port: number) =>
    startBroker({ port, dataDir, logger: quiet, groupOptions: { initialRebalanceDelayMs: 0 } });
  let broker = await start(0);
  const port = broker.port;
  const brokers = [`127.0.0.1:${port}`];
  // kafkajs' own connection timeout and retries (the fixture restarts the broker under the registry)
  const kafka = createKafka(brokers, 'sr-test', pino({ level: 'silent' }), { connectionTimeout: 1_000, retry: {} });
  const started: RunningSchemaRegistry[] = [];
  const startRegistry = async () => {
    const r = await startSchemaRegistry({ kafka, topic, port: 0, logger: quiet });
    started.push(r);
    return r;
  };
  const registry = await startRegistry();
  return {
    get broker() {
      return broker;
    },
    brokers,
    kafka,
    topic,
    registry,
    startRegistry,
    stopBroker: () => broker.close(),
    async restartBroker() {
      await broker.close();
      broker = await start(port);
    },
    async close() {
      for (const r of started) await r.close();
      await broker.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** fetch against the registry the way curl users do, returning status, content type and JSON body */
export async function sr(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; contentType: string | null; body: any }> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: body !== undefined ? { 'content-type': SR_CONTENT_TYPE } : {},
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: r.status, contentType: r.headers.get('content-type'), body: json };
}
