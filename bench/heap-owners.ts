// Where a process's V8 heap goes, by owner: each object is charged to the nearest instance of a class
// of ours on its shortest retaining path from the GC roots, and within that owner to the property the
// path leaves it by ("StoreCatalog.products"). What no class of ours retains is charged to the kind of
// object it is (compiled code, strings held by modules, …).
//
//   node bench/heap-owners.ts --pid <pid> [--out <file>]   snapshot a running process's main thread through
//                                                           its inspector (SIGUSR1 opens it on 127.0.0.1:9229)
//   node bench/heap-owners.ts <file.heapsnapshot>           read a snapshot taken before
//
// `--top N` (default 40) owners are printed, largest first, with their five largest properties.
// Snapshots of a GB-sized heap are read as a stream: the nodes and edges into typed arrays, the strings
// one by one.
import { closeSync, createWriteStream, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    pid: { type: 'string' },
    out: { type: 'string' },
    top: { type: 'string', default: '40' },
    port: { type: 'string', default: '9229' },
  },
});

/** a snapshot of the process's main thread, written to `file` */
async function snapshot(pid: number, port: number, file: string): Promise<void> {
  process.kill(pid, 'SIGUSR1');
  let url: string | undefined;
  for (let i = 0; i < 50 && !url; i++) {
    try {
      const list = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
        webSocketDebuggerUrl: string;
      }[];
      url = list[0]?.webSocketDebuggerUrl;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (!url) throw new Error(`no inspector on port ${port} for pid ${pid}`);
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const out = createWriteStream(file);
  let bytes = 0;
  let next = 1;
  const pending = new Map<number, (v: unknown) => void>();
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as {
      id?: number;
      method?: string;
      params?: { chunk: string; done: number; total: number };
    };
    if (msg.method === 'HeapProfiler.addHeapSnapshotChunk' && msg.params) {
      out.write(msg.params.chunk);
      bytes += msg.params.chunk.length;
    } else if (msg.method === 'HeapProfiler.reportHeapSnapshotProgress' && msg.params?.done === msg.params?.total) {
      process.stderr.write('snapshot taken, writing\n');
    } else if (msg.id !== undefined) pending.get(msg.id)?.(msg);
  };
  const call = (method: string, params: object = {}) =>
    new Promise((resolve) => {
      const id = next++;
      pending.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await call('HeapProfiler.enable');
  await call('HeapProfiler.takeHeapSnapshot', { reportProgress: true, captureNumericValue: false });
  await new Promise<void>((resolve) => out.end(resolve));
  process.stderr.write(`${(bytes / 2 ** 20).toFixed(0)} MiB written to ${file}\n`);
  ws.close();
}

interface Snapshot {
  nodeFields: string[];
  nodeTypes: string[];
  edgeFields: string[];
  edgeTypes: string[];
  nodes: Uint32Array;
  edges: Uint32Array;
  strings: string[];
}

/** a growable Uint32Array */
class U32s {
  a = new Uint32Array(1 << 20);
  n = 0;
  push(v: number): void {
    if (this.n === this.a.length) {
      const b = new Uint32Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = v;
  }
}

/** reads a .heapsnapshot without holding it as one string */
function readSnapshot(file: string): Snapshot {
  const fd = openSync(file, 'r');
  const size = statSync(file).size;
  const buf = Buffer.alloc(1 << 24);
  let len = 0;
  let pos = 0;
  let fileAt = 0;
  const fill = (): boolean => {
    if (pos > 0) {
      buf.copy(buf, 0, pos, len);
      len -= pos;
      pos = 0;
    }
    const got = readSync(fd, buf, len, buf.length - len, fileAt);
    fileAt += got;
    len += got;
    return got > 0;
  };
  fill();
  const headEnd = buf.indexOf('"nodes":[', 0, 'latin1');
  const head = JSON.parse(`${buf.toString('utf8', 0, headEnd).replace(/,\s*$/, '')}}`) as {
    snapshot: {
      meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
    };
  };
  pos = headEnd + '"nodes":['.length;
  const numbers = (): Uint32Array => {
    const out = new U32s();
    let v = -1;
    for (;;) {
      if (pos >= len && !fill()) throw new Error('truncated snapshot');
      const c = buf[pos++] as number;
      if (c >= 48 && c <= 57) v = (v < 0 ? 0 : v * 10) + (c - 48);
      else {
        if (v >= 0) out.push(v);
        v = -1;
        if (c === 93) return out.a.subarray(0, out.n); // ]
      }
    }
  };
  const skipTo = (s: string) => {
    for (;;) {
      const i = buf.indexOf(s, pos, 'latin1');
      if (i >= 0 && i + s.length <= len) {
        pos = i + s.length;
        return;
      }
      pos = Math.max(pos, len - s.length);
      if (!fill()) throw new Error(`no ${s} in the snapshot`);
    }
  };
  const nodes = numbers();
  skipTo('"edges":[');
  const edges = numbers();
  skipTo('"strings":[');
  const strings: string[] = [];
  for (;;) {
    while (pos < len && buf[pos] !== 34 && buf[pos] !== 93) pos++;
    if (pos >= len) {
      if (!fill()) break;
      continue;
    }
    if (buf[pos] === 93) break;
    // a string from its opening quote to the next unescaped quote
    let end = pos + 1;
    for (;;) {
      if (end >= len) {
        const start = pos;
        if (!fill()) throw new Error('truncated string');
        end -= start;
        continue;
      }
      const c = buf[end];
      if (c === 92) end += 2;
      else if (c === 34) break;
      else end++;
    }
    strings.push(JSON.parse(buf.toString('utf8', pos, end + 1)) as string);
    pos = end + 1;
  }
  closeSync(fd);
  process.stderr.write(
    `read ${(size / 2 ** 20).toFixed(0)} MiB: ${nodes.length} node fields, ${strings.length} strings\n`,
  );
  const m = head.snapshot.meta;
  return {
    nodeFields: m.node_fields,
    nodeTypes: m.node_types[0],
    edgeFields: m.edge_fields,
    edgeTypes: m.edge_types[0],
    nodes,
    edges,
    strings,
  };
}

/** class names declared in the project's own source */
function ourClasses(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts'))
        for (const m of readFileSync(p, 'utf8').matchAll(/\bclass\s+([A-Za-z_$][\w$]*)/g)) names.add(m[1] as string);
    }
  };
  for (const d of ['services', 'streams', 'clickhouse', 'schemas']) walk(d);
  return names;
}

interface Owner {
  bytes: number;
  objects: number;
  via: Map<string, number>;
}

/** charges every reachable object's self size to its owner (see the header) */
export function owners(s: Snapshot, ours: Set<string>): Map<string, Owner> {
  const NF = s.nodeFields.length;
  const EF = s.edgeFields.length;
  const fType = s.nodeFields.indexOf('type');
  const fName = s.nodeFields.indexOf('name');
  const fSize = s.nodeFields.indexOf('self_size');
  const fEdges = s.nodeFields.indexOf('edge_count');
  const eType = s.edgeFields.indexOf('type');
  const eName = s.edgeFields.indexOf('name_or_index');
  const eTo = s.edgeFields.indexOf('to_node');
  const count = s.nodes.length / NF;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0; i < count; i++)
    firstEdge[i + 1] = (firstEdge[i] as number) + (s.nodes[i * NF + fEdges] as number) * EF;
  const weak = s.edgeTypes.indexOf('weak');
  const shortcut = s.edgeTypes.indexOf('shortcut');
  const named = new Set(['context', 'property', 'internal', 'shortcut'].map((t) => s.edgeTypes.indexOf(t)));
  const objectType = s.nodeTypes.indexOf('object');
  // owner label per node: an index into `labels` ("Class" or "Class.property"), 0 = not yet reached
  const labels: string[] = ['', '(roots)'];
  const labelOf = new Map<string, number>();
  const label = (l: string) => {
    let i = labelOf.get(l);
    if (i === undefined) labelOf.set(l, (i = labels.push(l) - 1));
    return i;
  };
  const owner = new Uint32Array(count); // label of the owning instance ("Class")
  const via = new Uint32Array(count); // label "Class.property"
  const isOurs = (n: number) =>
    (s.nodes[n * NF + fType] as number) === objectType &&
    ours.has(s.strings[s.nodes[n * NF + fName] as number] as string);
  const queue = new Uint32Array(count);
  let head = 0;
  let tail = 0;
  owner[0] = 1;
  via[0] = 1;
  queue[tail++] = 0;
  while (head < tail) {
    const n = queue[head++] as number;
    const mine = isOurs(n);
    for (let e = firstEdge[n] as number; e < (firstEdge[n + 1] as number); e += EF) {
      const t = s.edges[e + eType] as number;
      if (t === weak || t === shortcut) continue;
      const c = (s.edges[e + eTo] as number) / NF;
      if (owner[c] !== 0) continue;
      if (isOurs(c)) {
        const l = label(s.strings[s.nodes[c * NF + fName] as number] as string);
        owner[c] = l;
        via[c] = l;
      } else if (mine) {
        const cls = labels[owner[n] as number] as string;
        const nm = named.has(t) ? (s.strings[s.edges[e + eName] as number] as string) : '[]';
        owner[c] = owner[n] as number;
        via[c] = label(`${cls}.${nm}`);
      } else if (owner[n] === 1) {
        // not (yet) inside anything of ours: charge it to the kind of object it is
        const type = s.nodeTypes[s.nodes[c * NF + fType] as number] as string;
        const name = /string|number/.test(type)
          ? ''
          : ` ${String(s.strings[s.nodes[c * NF + fName] as number]).slice(0, 40)}`;
        owner[c] = 1;
        via[c] = label(`(${type})${name}`);
      } else {
        owner[c] = owner[n] as number;
        via[c] = via[n] as number;
      }
      queue[tail++] = c;
    }
  }
  const out = new Map<string, Owner>();
  for (let n = 0; n < count; n++) {
    if (owner[n] === 0) continue;
    const o = labels[owner[n] as number] as string;
    let rec = out.get(o);
    if (!rec) out.set(o, (rec = { bytes: 0, objects: 0, via: new Map() }));
    const size = s.nodes[n * NF + fSize] as number;
    rec.bytes += size;
    rec.objects++;
    const v = labels[via[n] as number] as string;
    rec.via.set(v, (rec.via.get(v) ?? 0) + size);
  }
  return out;
}

async function main() {
  let file = positionals[0];
  if (values.pid) {
    file = values.out ?? `/tmp/heap-${values.pid}-${Date.now()}.heapsnapshot`;
    await snapshot(Number(values.pid), Number(values.port), file);
  }
  if (!file) throw new Error('usage: node bench/heap-owners.ts --pid <pid> | <file.heapsnapshot>');
  const result = owners(readSnapshot(file), ourClasses());
  const total = [...result.values()].reduce((a, o) => a + o.bytes, 0);
  const mb = (b: number) => `${(b / 1e6).toFixed(1).padStart(8)} MB`;
  console.log(`${mb(total)}  reachable, by owner:`);
  const rows = [...result.entries()].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(values.top));
  for (const [name, o] of rows) {
    console.log(`${mb(o.bytes)}  ${name} (${o.objects} objects)`);
    const parts = [...o.via.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
    for (const [v, b] of parts) if (v !== name && b > total / 1000) console.log(`${' '.repeat(13)}${mb(b)}  ${v}`);
  }
}

await main();
