// The per-store lifecycle of the read API's stream-aggregate indexes (services/storefront/per-store.ts): a
// change published while a store's load is still reading the tables is applied to what the load returns
// (the load may have read before the change's rows were written), not dropped until the next reload.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../services/common/logger.ts';
import { PerStore } from '../../services/storefront/per-store.ts';

interface State {
  version: number;
  rows: string[];
}

describe('PerStore', () => {
  it('applies a change published during the first load once that load is in place', async () => {
    let release: () => void = () => {};
    const table = ['a'];
    const store = new PerStore<State>({
      name: 'test index',
      logger: createLogger('per-store-test', 'silent'),
      // reads the table now, answers when released (a slow first load)
      load: async () => {
        const rows = [...table];
        await new Promise<void>((r) => {
          release = r;
        });
        return { version: 0, rows };
      },
    });
    try {
      const loading = store.get('s1');
      // a row written after the load read the table, and its change published meanwhile
      table.push('b');
      const applied = store.change('s1', async (s) => {
        s.rows = [...table];
      });
      release();
      const s = await loading;
      await applied;
      expect(s.rows).toEqual(['a', 'b']);
      expect(s.version).toBe(2); // loaded (1), then the change (2)
    } finally {
      store.close();
    }
  });

  it('ignores a change for a store nobody loaded (its first load reads it)', async () => {
    let loads = 0;
    const store = new PerStore<State>({
      name: 'test index',
      logger: createLogger('per-store-test', 'silent'),
      load: async () => {
        loads++;
        return { version: 0, rows: ['x'] };
      },
    });
    try {
      let ran = false;
      await store.change('s2', async () => {
        ran = true;
      });
      expect(ran).toBe(false);
      expect((await store.get('s2')).rows).toEqual(['x']);
      expect(loads).toBe(1);
    } finally {
      store.close();
    }
  });
});
