// The brokers the client suites run against, in the same run: the embedded broker (in process) and
// Apache Kafka 4.4 (one KRaft node started with the project's launcher). BROKER_TARGETS=embedded (or
// =kafka) narrows a local run to one of them.
//
//   describe.each(brokerTargets())('$name', (target) => { let b; beforeAll(async () => { b = await target.start(); }); … });
import type { Kafka } from '../../services/common/kafka/index.ts';
import { startTestBroker, testKafka } from '../broker/helpers/broker.ts';
import { startTestKafka } from './helpers.ts';

export interface RunningBroker {
  brokers: string[];
  kafka(clientId?: string): Kafka;
  stop(): Promise<void>;
}

export interface BrokerTarget {
  name: string;
  /** 'embedded' or 'kafka' */
  id: 'embedded' | 'kafka';
  start(): Promise<RunningBroker>;
}

export const EMBEDDED: BrokerTarget = {
  name: 'embedded broker',
  id: 'embedded',
  start: () => startTestBroker(),
};

export const APACHE_KAFKA: BrokerTarget = {
  name: 'Apache Kafka 4.4',
  id: 'kafka',
  async start() {
    const k = await startTestKafka(1);
    return { brokers: k.brokers, kafka: (clientId = 'test') => testKafka(k.brokers, clientId), stop: () => k.close() };
  },
};

export function brokerTargets(): BrokerTarget[] {
  const only = process.env.BROKER_TARGETS?.split(',').map((s) => s.trim());
  return [EMBEDDED, APACHE_KAFKA].filter((t) => !only || only.includes(t.id));
}
