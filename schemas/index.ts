// The contracts: every shape that crosses a boundary (HTTP bodies, Kafka values), the Avro value schemas
// generated from them, the value codec and the topic registry.
export * from './avro/index.ts';
export * from './codec.ts';
export * from './events.ts';
export * from './orders.ts';
export * from './registry-client.ts';
export * from './requests.ts';
export * from './topics.ts';
