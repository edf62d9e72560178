// `webhook-secrets`: the HMAC secrets of a store's catalog webhooks.
import type { Command } from 'commander';
import { newUlid } from '../../common/ids.ts';
import { WebhookSecretConfig } from '../../../schemas/config.ts';
import { bounds } from '../flags.ts';
import { out, writer } from '../io.ts';

const SECRET_MIN = bounds(WebhookSecretConfig, 'secret').min;

export function registerWebhookSecrets(program: Command): void {
  const hooks = program
    .command('webhook-secrets')
    .description('HMAC secrets of the catalog webhooks of a store (several during a rotation)');
  hooks
    .command('add')
    .description('add a secret (generated unless --secret); printed once')
    .argument('<store>', 'store id')
    .option('--secret <secret>', `the platform’s webhook secret (at least ${SECRET_MIN} characters)`)
    .option('--label <label>', 'what it is for')
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const { randomBytes } = await import('node:crypto');
      const secret = o.secret ?? randomBytes(32).toString('hex');
      const r = await (await writer()).putConfig(store, 'webhook_secret', {
        id: newUlid(),
        secret,
        label: o.label ?? null,
        created_at: new Date().toISOString(),
      });
      out(cmd, `webhook secret ${r.itemId} added${o.secret ? '' : `\nsecret: ${secret} (shown only now)`}`, {
        store_id: store,
        id: r.itemId,
        secret: o.secret ? undefined : secret,
        offset: r.offset,
      });
    });
  hooks
    .command('list')
    .description('list the secrets (ids, labels, dates; never the secrets)')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const items = (await (await writer()).reader())
        .items(store, 'webhook_secret')
        .map(({ secret: _s, ...rest }) => rest);
      out(
        cmd,
        items.map((i) => `${i.id}\t${i.created_at ?? ''}\t${i.label ?? ''}`).join('\n') || '(no webhook secrets)',
        items,
      );
    });
  hooks
    .command('delete')
    .description('remove a secret (webhooks signed with it answer 401)')
    .argument('<store>', 'store id')
    .argument('<id>', 'secret id')
    .action(async (store: string, id: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).deleteConfig(store, 'webhook_secret', id);
      out(cmd, `webhook secret ${id} deleted`, { store_id: store, id, deleted: true, offset: r.offset });
    });
}
