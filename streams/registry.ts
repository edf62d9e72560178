// Every processor by name (`--processor <name>`, STREAMS_PROCESSORS, replay).
import { eventsProcessor } from './events/processor.ts';
import { ordersProcessor } from './orders/processor.ts';
import { rejectedProcessor } from './rejected/processor.ts';
import { requestsProcessor } from './requests/processor.ts';
import type { Processor } from './runtime/types.ts';

export const PROCESSORS: Record<string, Processor<any>> = {
  events: eventsProcessor,
  requests: requestsProcessor,
  orders: ordersProcessor,
  rejected: rejectedProcessor,
};

/** 'all' or a comma-separated list → processors; throws on an unknown name. */
export function selectProcessors(spec: string): Processor<any>[] {
  if (spec.trim() === '' || spec === 'all') return Object.values(PROCESSORS);
  return spec.split(',').map((n) => {
    const p = PROCESSORS[n.trim()];
    if (!p) throw new Error(`unknown processor ${JSON.stringify(n)}; known: ${Object.keys(PROCESSORS).join(', ')}`);
    return p;
  });
}
