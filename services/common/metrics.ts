// One Prometheus registry per process, exposed at /metrics by the app.
import client from 'prom-client';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

function getOrCreate<T>(name: string, create: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}

export function counter(name: string, help: string, labelNames: string[] = []): client.Counter<string> {
  return getOrCreate(name, () => new client.Counter({ name, help, labelNames, registers: [registry] }));
}

export function gauge(name: string, help: string, labelNames: string[] = []): client.Gauge<string> {
  return getOrCreate(name, () => new client.Gauge({ name, help, labelNames, registers: [registry] }));
}

export function histogram(
  name: string,
  help: string,
  labelNames: string[] = [],
  buckets: number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
): client.Histogram<string> {
  return getOrCreate(name, () => new client.Histogram({ name, help, labelNames, buckets, registers: [registry] }));
}
