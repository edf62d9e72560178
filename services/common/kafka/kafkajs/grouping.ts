// kafkajs' producer groups a send's messages by partition with `[...current, message]` for every message
// (kafkajs/src/producer/groupMessagesPerPartition.js): quadratic in the messages per partition (the
// figures are in docs/development.md). This module, evaluated before kafkajs loads (swaps.ts imports it
// first), registers a linear grouping with the same result under that module id (kafkajs' producer takes
// it when it first loads); when kafkajs was loaded before it, nothing is swapped
// (kafkajsGroupingIsLinear() says so, and swaps.ts reports it) and kafkajs' own grouping stays.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface GroupArgs {
  topic: string;
  partitionMetadata: unknown[];
  messages: unknown[];
  partitioner: (args: { topic: string; partitionMetadata: unknown[]; message: unknown }) => number;
}

/** kafkajs' groupMessagesPerPartition, in one pass: partition → its messages in send order */
export function groupMessagesPerPartition({
  topic,
  partitionMetadata,
  messages,
  partitioner,
}: GroupArgs): Record<number, unknown[]> {
  const result: Record<number, unknown[]> = {};
  if (partitionMetadata.length === 0) return result;
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    const current = result[partition];
    if (current) current.push(message);
    else result[partition] = [message];
  }
  return result;
}

let id: string | undefined;
try {
  id = require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js');
} catch {
  id = undefined;
}
if (id && !require.cache[id]) {
  require.cache[id] = {
    id,
    filename: id,
    loaded: true,
    exports: groupMessagesPerPartition,
    children: [],
    paths: [],
  } as unknown as NodeJS.Module;
}

/** Whether kafkajs' producer groups messages with the linear grouping above. */
export function kafkajsGroupingIsLinear(): boolean {
  return id !== undefined && require.cache[id]?.exports === groupMessagesPerPartition;
}
