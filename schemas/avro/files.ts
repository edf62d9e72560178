// The committed .avsc copies of the generated value schemas (for analysts, other languages and review
// diffs). `node schemas/avro/write-avsc.ts` rewrites them; test/schemas/avro.test.ts keeps them in sync.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const AVSC_DIR = path.dirname(fileURLToPath(import.meta.url));

export const AVSC_FILES = {
  events: 'storefront-event.avsc',
  rejected: 'rejected-event.avsc',
  requests: 'request-event.avsc',
  orders: 'order.avsc',
} as const;
