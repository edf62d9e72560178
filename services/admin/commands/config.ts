// `config export` / `config import`: a store configuration as one JSON document.
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { out, readJsonFile, writer } from '../io.ts';

export function registerConfig(program: Command): void {
  const config = program.command('config').description('export and import a store configuration as one JSON document');
  config
    .command('export')
    .description('export a store configuration (no tokens, no previews)')
    .argument('<store>', 'store id')
    .option('-o, --out <file>', 'write to a file instead of stdout')
    .action(async (store: string, o: Record<string, any>) => {
      const doc = await (await writer()).exportConfig(store);
      const text = `${JSON.stringify(doc, null, 2)}\n`;
      if (o.out) {
        writeFileSync(o.out, text);
        process.stderr.write(`exported ${store} to ${o.out}\n`);
      } else process.stdout.write(text);
    });
  config
    .command('import')
    .description('import a document: into a new store (default; prints its token) or into --store')
    .argument('<file>', 'the exported JSON document ("-" = stdin)')
    .option('--store <id>', 'target store id (created when it does not exist)')
    .option('--name <name>', 'store name (default: the document)')
    .option('--prune', 'with --store: delete items the document does not have')
    .action(async (file: string, o: Record<string, any>, cmd: Command) => {
      const doc = readJsonFile(file, '<file>');
      const r = await (await writer()).importConfig(doc, { storeId: o.store, name: o.name, prune: Boolean(o.prune) });
      out(
        cmd,
        `${r.created ? 'created' : 'updated'} store ${r.storeId}: ${r.written} item(s) written, ${r.deleted} deleted${r.token ? `\ntoken: ${r.token} (shown only now)` : ''}`,
        {
          store_id: r.storeId,
          created: r.created,
          token: r.token,
          written: r.written,
          deleted: r.deleted,
          offset: r.offset,
        },
      );
    });
}
