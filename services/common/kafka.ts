// kafkajs wiring shared by every producer and consumer: one place maps kafkajs logs to pino and sets the
// delivery defaults (idempotent producer, acks=all).
import { Kafka, type KafkaConfig, logLevel, type Producer, type ProducerConfig } from 'kafkajs';
import type { Logger } from './logger.ts';

/**
 * kafkajs 2.2.4 arms its request-queue timer with a negative delay when nothing is throttled, which Node
 * ≥ 24 reports as a TimeoutNegativeWarning on every client (the timer fires after 1 ms, as kafkajs
 * expects). Drop exactly that warning; every other warning still reaches Node's default handlers.
 */
function muteKafkajsTimerWarning(): void {
  if (kafkajsTimerWarningMuted) return;
  kafkajsTimerWarningMuted = true;
  const handlers = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (w.name === 'TimeoutNegativeWarning') return;
    for (const h of handlers) h(w);
  });
}
let kafkajsTimerWarningMuted = false;

export function createKafka(brokers: string[], clientId: string, logger: Logger, extra: Partial<KafkaConfig> = {}): Kafka {
  muteKafkajsTimerWarning();
  return new Kafka({
    clientId,
    brokers,
    connectionTimeout: 3_000,
    requestTimeout: 30_000,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log }) => {
      const { message, ...rest } = log;
      const fields = { kafkajs: namespace, ...rest };
      if (level <= logLevel.ERROR) logger.error(fields, message);
      else if (level === logLevel.WARN) logger.warn(fields, message);
      else logger.debug(fields, message);
    },
    ...extra,
  });
}

/** An idempotent producer: acks=all is forced by kafkajs when idempotent is set. */
export function createIdempotentProducer(kafka: Kafka, extra: Partial<ProducerConfig> = {}): Producer {
  return kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false, ...extra });
}
