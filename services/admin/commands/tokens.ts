// `tokens`: issue, revoke, list the storefront access tokens of a store.
import type { Command } from 'commander';
import { NotFoundError, out, writer } from '../io.ts';

export function registerTokens(program: Command): void {
  const tokens = program.command('tokens').description('storefront access tokens (only their SHA-256 is stored)');
  tokens
    .command('issue')
    .description('issue a new token for a store (shown once)')
    .argument('<store>', 'store id')
    .option('--label <label>', 'what the token is for')
    .action(async (store: string, o: Record<string, any>, cmd: Command) => {
      const r = await (await writer()).issueToken(store, o.label ?? null);
      out(cmd, `token: ${r.token}\ntoken id: ${r.tokenId}\nThe token is shown only now.`, {
        store_id: store,
        token: r.token,
        token_id: r.tokenId,
        offset: r.offset,
      });
    });
  tokens
    .command('revoke')
    .description('revoke a token: requests with it answer 401')
    .argument('<store>', 'store id')
    .argument('<tokenId>', 'token id (from `tokens list`)')
    .action(async (store: string, tokenId: string, _o: unknown, cmd: Command) => {
      const r = await (await writer()).revokeToken(store, tokenId);
      out(cmd, `token ${tokenId} revoked`, { store_id: store, token_id: tokenId, revoked: true, offset: r.offset });
    });
  tokens
    .command('list')
    .description('list the tokens of a store (ids, labels, dates; never the tokens)')
    .argument('<store>', 'store id')
    .action(async (store: string, _o: unknown, cmd: Command) => {
      const dir = await (await writer()).reader();
      if (!dir.getStore(store)) throw new NotFoundError(`store ${store} does not exist`);
      const items = dir.items(store, 'access_token').map(({ sha256: _h, ...t }) => t);
      out(
        cmd,
        items
          .map((t) => `${t.token_id}\t${t.revoked_at ? `revoked ${t.revoked_at}` : 'active'}\t${t.label ?? ''}`)
          .join('\n') || '(no tokens)',
        items,
      );
    });
}
