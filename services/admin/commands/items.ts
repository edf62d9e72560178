// put / list / get / delete of one configuration kind (the kinds are declared in ../kinds.ts).
import type { Command } from 'commander';
import { jsonArg } from '../flags.ts';
import { asObject, defined, mergeDeep, NotFoundError, out, readJsonFile, writer } from '../io.ts';
import type { KindSpec } from '../kinds.ts';

export function addItemCommands(program: Command, spec: KindSpec): Command {
  const group = program.command(spec.command).description(spec.description);
  group.addHelpText('after', `\nExamples:\n${spec.examples.map((e) => `  $ npm run admin -- ${e}`).join('\n')}\n`);

  const put = group
    .command('put')
    .description(
      `create or replace a ${spec.noun}; flags override --file/--json fields; with an existing ${spec.idName} and no --file, only the given fields change`,
    )
    .argument('<store>', 'store id')
    .option('-f, --file <path>', `the ${spec.noun} as JSON ("-" = stdin)`)
    .option('--json-item <json>', `the ${spec.noun} as inline JSON`, jsonArg);
  spec.flags(put);
  put.action(async (store: string, o: Record<string, any>, cmd: Command) => {
    const w = await writer();
    let base: Record<string, unknown> = {};
    if (o.file !== undefined) base = asObject(readJsonFile(o.file, '--file'), '--file');
    if (o.jsonItem !== undefined) base = { ...base, ...asObject(o.jsonItem, '--json-item') };
    const flags = defined(spec.fromFlags(o));
    let item: Record<string, unknown> = { ...base, ...flags };
    if (o.file === undefined && o.jsonItem === undefined && spec.idField && item[spec.idField] !== undefined) {
      const dir = await w.reader();
      const id = spec.normalizeId ? spec.normalizeId(String(item[spec.idField])) : String(item[spec.idField]);
      const existing = dir.item(store, spec.kind, id);
      if (existing) item = mergeDeep(existing as Record<string, unknown>, item);
    }
    if (spec.newId && spec.idField && item[spec.idField] === undefined) item = { ...spec.newId(), ...item };
    const r = await w.putConfig(store, spec.kind, item);
    out(cmd, `${spec.noun} ${r.itemId} written to store ${store} (offset ${r.offset})`, {
      store_id: store,
      kind: spec.kind,
      item_id: r.itemId,
      offset: r.offset,
      item: r.value,
    });
  });

  group
    .command('list')
    .description(`list the ${spec.noun}s of a store`)
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const dir = await (await writer()).reader();
      if (!dir.getStore(store)) throw new NotFoundError(`store ${store} does not exist`);
      const items = dir.items(store, spec.kind);
      out(cmd, items.length ? items.map((i) => spec.summary(i)).join('\n') : `(no ${spec.noun}s)`, items);
    });

  group
    .command('get')
    .description(`print one ${spec.noun} as JSON`)
    .argument('<store>', 'store id')
    .argument('<id>', spec.idName)
    .action(async (store: string, id: string) => {
      const dir = await (await writer()).reader();
      const item = dir.item(store, spec.kind, spec.normalizeId ? spec.normalizeId(id) : id);
      if (!item) throw new NotFoundError(`${spec.noun} ${id} does not exist in store ${store}`);
      process.stdout.write(`${JSON.stringify(item, null, 2)}\n`);
    });

  group
    .command('delete')
    .description(`delete a ${spec.noun} (a tombstone on the topic)`)
    .argument('<store>', 'store id')
    .argument('<id>', spec.idName)
    .action(async (store: string, id: string, _o: unknown, cmd: Command) => {
      const itemId = spec.normalizeId ? spec.normalizeId(id) : id;
      const r = await (await writer()).deleteConfig(store, spec.kind, itemId);
      out(cmd, `${spec.noun} ${itemId} deleted from store ${store} (offset ${r.offset})`, {
        store_id: store,
        kind: spec.kind,
        item_id: itemId,
        deleted: true,
        offset: r.offset,
      });
    });
  return group;
}
