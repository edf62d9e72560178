// One Prometheus registry per thread, exposed at /metrics by the app. A thread that hosts part of the
// app elsewhere (the stream processors' worker thread, streams/module.ts) adds its registry's values as a
// source: /metrics and the ops dashboard read the merged view.
import { isMainThread } from 'node:worker_threads';
import client, { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';

export const registry = new client.Registry();
// process-wide figures (CPU, memory, event loop of the main thread) once, from the main thread
if (isMainThread) client.collectDefaultMetrics({ register: registry });

export type MetricsJSON = MetricObjectWithValues<MetricValue<string>>[];
const sources = new Set<() => Promise<MetricsJSON>>();

/** Add another thread's metrics to /metrics; returns its removal. */
export function addMetricsSource(source: () => Promise<MetricsJSON>): () => void {
  sources.add(source);
  return () => sources.delete(source);
}

/** This thread's metrics and every source's (a source that fails to answer is left out of this read). */
export async function metricsJSON(): Promise<MetricsJSON> {
  return (await gather()).flat();
}

async function gather(): Promise<MetricsJSON[]> {
  const parts = [(await registry.getMetricsAsJSON()) as MetricsJSON];
  for (const source of sources) parts.push(await source().catch(() => []));
  return parts;
}

/** The Prometheus text exposition of metricsJSON() (series of the same name merged, as prom-client's cluster mode does). */
export async function renderMetrics(): Promise<string> {
  if (sources.size === 0) return registry.metrics();
  return AggregatorRegistry.aggregate(await gather()).metrics();
}

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
