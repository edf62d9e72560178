// Rewrite the committed .avsc files from the zod contracts. Refuses a change that is not BACKWARD
// compatible with the committed version (a new reader must read existing data): add fields as
// nullable (default null) or with a default instead, or introduce a new topic version.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import avro from 'avsc';
import { AVSC_DIR, AVSC_FILES } from './files.ts';
import { TOPIC_VALUE_SCHEMAS } from './index.ts';

let failed = false;
for (const [key, file] of Object.entries(AVSC_FILES)) {
  const target = path.join(AVSC_DIR, file);
  const generated = TOPIC_VALUE_SCHEMAS[key as keyof typeof TOPIC_VALUE_SCHEMAS];
  if (existsSync(target)) {
    const committed = JSON.parse(readFileSync(target, 'utf8'));
    try {
      avro.Type.forSchema(generated).createResolver(avro.Type.forSchema(committed));
    } catch (err) {
      process.stderr.write(`${file}: not BACKWARD compatible with the committed schema: ${(err as Error).message}\n`);
      failed = true;
      continue;
    }
  }
  writeFileSync(target, `${JSON.stringify(generated, null, 2)}\n`);
  process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
}
process.exit(failed ? 1 : 0);
