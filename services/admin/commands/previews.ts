// `previews`: merchandising previews (a rule served for browse requests with preview_id, for a while).
import type { Command } from 'commander';
import { jsonArg } from '../flags.ts';
import { asObject, NotFoundError, out, readJsonFile, UsageError, writer } from '../io.ts';

export function registerPreviews(program: Command): void {
  const previews = program
    .command('previews')
    .description('merchandising previews: a rule served for browse requests with preview_id, for 1 hour');
  previews
    .command('create')
    .description(
      'create a preview from a rule (file, inline JSON, or an existing rule with changes); prints the preview id',
    )
    .argument('<store>', 'store id')
    .option('-f, --file <path>', 'the rule as JSON ("-" = stdin)')
    .option('--from-rule <ulid>', 'start from an existing merchandising rule')
    .option('--json-item <json>', 'rule fields as inline JSON (applied last)', jsonArg)
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const w = await writer();
      let rule: Record<string, unknown> = {};
      if (o.fromRule) {
        const existing = (await w.reader()).item(store, 'merch_rule', o.fromRule);
        if (!existing) throw new NotFoundError(`merchandising rule ${o.fromRule} does not exist in store ${store}`);
        rule = { ...existing };
      }
      if (o.file !== undefined) rule = { ...rule, ...asObject(readJsonFile(o.file, '--file'), '--file') };
      if (o.jsonItem !== undefined) rule = { ...rule, ...asObject(o.jsonItem, '--json-item') };
      if (!o.fromRule && o.file === undefined && o.jsonItem === undefined)
        throw new UsageError('give the rule with --file, --json-item or --from-rule');
      const r = await w.putConfig(store, 'merch_preview', { rule: { id: null, ...rule } });
      out(cmd, `preview id: ${r.itemId}\nexpires at: ${r.value.expires_at}`, {
        store_id: store,
        preview_id: r.itemId,
        expires_at: r.value.expires_at,
        offset: r.offset,
      });
    });
  previews
    .command('list')
    .description('list live previews')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const items = (await (await writer()).reader()).items(store, 'merch_preview');
      out(
        cmd,
        items.map((p) => `${p.id}\texpires ${p.expires_at}\t${p.rule.collection_handle}\t${p.rule.name}`).join('\n') ||
          '(no previews)',
        items,
      );
    });
  previews
    .command('delete')
    .description('end a preview now')
    .argument('<store>', 'store id')
    .argument('<previewId>', 'preview id (UUID)')
    .action(async (store: string, id: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).deleteConfig(store, 'merch_preview', id);
      out(cmd, `preview ${id} deleted`, { store_id: store, preview_id: id, deleted: true, offset: r.offset });
    });
  previews
    .command('prune')
    .description('delete (tombstone) the expired previews of a store')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const n = await (await writer()).pruneExpiredPreviews(store);
      out(cmd, `${n} expired preview(s) deleted`, { store_id: store, deleted: n });
    });
}
