// The per-store lifecycle of the read API's stream-aggregate indexes (services/storefront/per-store.ts): a
// change published while a store's load is still reading the tables is applied to what the load returns
// (the load may have read before the change's rows were written), not dropped until the next reload; a
// store's changes coalesce into few reads, and a slow store never holds back another store's changes.
import { describe, expect, it, vi } from 'vitest';
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
      patch: async (_id, s) => {
        s.rows = [...table];
      },
    });
    try {
      const loading = store.get('s1');
      // a row written after the load read the table, and its change published meanwhile
      table.push('b');
      const applied = store.change('s1', ['b']);
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
      patch: async () => {
        ran = true;
      },
    });
    let ran = false;
    try {
      await store.change('s2', ['x']);
      expect(ran).toBe(false);
      expect((await store.get('s2')).rows).toEqual(['x']);
      expect(loads).toBe(1);
    } finally {
      store.close();
    }
  });

  it('coalesces a burst of changes into few reads, and one slow store never delays another', async () => {
    const reads: { store: string; keys: string[] }[] = [];
    const gates = new Map<string, () => void>();
    const store = new PerStore<State>({
      name: 'test index',
      logger: createLogger('per-store-test', 'silent'),
      load: async () => ({ version: 0, rows: [] }),
      patch: async (id, s, keys) => {
        reads.push({ store: id, keys: [...keys] });
        // store "slow" answers only when released
        if (id === 'slow') await new Promise<void>((r) => gates.set(id, r));
        s.rows.push(...keys);
      },
    });
    try {
      await Promise.all([store.get('slow'), store.get('fast')]);
      // the slow store's first read is running; 50 chunk notifications arrive behind it
      const first = store.change('slow', ['p0']);
      const burst = Array.from({ length: 50 }, (_, i) => store.change('slow', [`p${i + 1}`, 'p0']));
      // another store's change applies while the slow one is still reading
      await store.change('fast', ['q1']);
      expect((await store.get('fast')).rows).toEqual(['q1']);
      expect(reads.filter((r) => r.store === 'slow')).toHaveLength(1);
      // released: the burst is one read of the keys published since, each key once
      (gates.get('slow') as () => void)();
      await vi.waitFor(() => expect(reads.filter((r) => r.store === 'slow')).toHaveLength(2));
      gates.get('slow')?.();
      await Promise.all([first, ...burst]);
      const slowReads = reads.filter((r) => r.store === 'slow');
      expect(slowReads).toHaveLength(2);
      expect(slowReads[1].keys.sort()).toEqual(['p0', ...Array.from({ length: 50 }, (_, i) => `p${i + 1}`)].sort());
      const slow = await store.get('slow');
      expect(slow.version).toBe(3); // loaded (1), then two reads
    } finally {
      store.close();
    }
  });
});
