// The contracts: every shape that crosses a boundary (HTTP bodies, Kafka values), the Avro value schemas
// generated from them and the topic registry (the value codec is runtime code: services/common/kafka/).
export * from './avro/index.ts';
export * from './events.ts';
export * from './orders.ts';
export * from './requests.ts';
export * from './topics.ts';
