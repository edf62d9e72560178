// A KRaft cluster of Apache Kafka on loopback, each node a `java kafka.Kafka` child process in combined
// mode (broker and controller; a static quorum of every node). Data under <dataDir>/apache-kafka-x<n>/,
// storage formatted on first start. Sized for a small shared machine: 256 MiB heap per node, two network
// and two I/O threads, small internal topics. With 3 nodes or more, topics get replication factor 3 and
// min.insync.replicas=2 by default (also __consumer_offsets and __transaction_state).
// KAFKA_JVM_OPTIONS (space-separated) is appended to every node's JVM options.
// Used by `npm run kafka:cluster` (start.ts), the tests (test/kafka/) and `npm run bench -- broker`.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { createKafka } from '../../services/common/kafka/index.ts';
import { ensureKafka, javaBin, javaVersion, KAFKA_VERSION, kafkaCacheDir } from './fetch.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const LOG4J = path.join(HERE, 'log4j2.properties');
const execFileAsync = promisify(execFile);

export interface KafkaClusterOptions {
  /** number of nodes (default 3) */
  brokers?: number;
  /** client ports, one per node (default 19092, 19093, …) */
  ports?: number[];
  /** controller ports, one per node (default client port + 10000) */
  controllerPorts?: number[];
  host?: string;
  /** the cluster's directories go under <dataDir>/apache-kafka-x<n> */
  dataDir: string;
  /** JVM heap per node in MiB (default 256) */
  heapMb?: number;
  /** extra JVM options for every node (after the defaults) */
  jvmOptions?: string[];
  /** extra server.properties (e.g. { 'log.flush.interval.messages': '1' }) */
  properties?: Record<string, string>;
  /** each log line of each node (default: written to stdout prefixed by the node) */
  output?: (node: string, line: string) => void;
  startTimeoutMs?: number;
  /** aborting stops the nodes started so far and rejects (Ctrl-C during start-up) */
  signal?: AbortSignal;
}

export interface KafkaCluster {
  /** host:port of every node */
  brokers: string[];
  bootstrap: string;
  clusterId: string;
  children: ChildProcess[];
  /** resolves with the first unexpected exit of a node */
  exited: Promise<{ node: number; code: number | null; signal: string | null }>;
  /** SIGTERM every node (controlled shutdown), SIGKILL after graceMs */
  stop(graceMs?: number): Promise<void>;
}

/** server.properties of node `id` (1-based) of an n-node cluster. */
export function nodeProperties(
  id: number,
  o: { host: string; ports: number[]; controllerPorts: number[]; logDir: string; properties?: Record<string, string> },
): Record<string, string> {
  const n = o.ports.length;
  const rf = String(Math.min(3, n));
  const minIsr = String(n >= 3 ? 2 : 1);
  return {
    'process.roles': 'broker,controller',
    'node.id': String(id),
    'controller.quorum.voters': o.controllerPorts.map((p, i) => `${i + 1}@${o.host}:${p}`).join(','),
    listeners: `PLAINTEXT://${o.host}:${o.ports[id - 1]},CONTROLLER://${o.host}:${o.controllerPorts[id - 1]}`,
    'advertised.listeners': `PLAINTEXT://${o.host}:${o.ports[id - 1]}`,
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': o.logDir,
    // durability: replicated topics survive one node down and acks=all needs two copies
    'default.replication.factor': rf,
    'min.insync.replicas': minIsr,
    'offsets.topic.replication.factor': rf,
    'transaction.state.log.replication.factor': rf,
    'transaction.state.log.min.isr': minIsr,
    'share.coordinator.state.topic.replication.factor': rf,
    'share.coordinator.state.topic.min.isr': minIsr,
    'unclean.leader.election.enable': 'false',
    'auto.create.topics.enable': 'true',
    'num.partitions': '1',
    // a small single-host cluster: few threads, small internal topics, a small cleaner buffer (the
    // default 128 MiB would not fit the heap), no rebalance delay
    'num.network.threads': '2',
    'num.io.threads': '2',
    'num.replica.fetchers': '1',
    'background.threads': '2',
    'num.recovery.threads.per.data.dir': '1',
    'log.cleaner.threads': '1',
    'log.cleaner.dedupe.buffer.size': String(8 * 1024 * 1024),
    'offsets.topic.num.partitions': '6',
    'transaction.state.log.num.partitions': '6',
    'share.coordinator.state.topic.num.partitions': '3',
    'group.initial.rebalance.delay.ms': '0',
    'log.segment.bytes': String(128 * 1024 * 1024),
    'socket.request.max.bytes': String(100 * 1024 * 1024),
    ...o.properties,
  };
}

function writeProperties(file: string, props: Record<string, string>) {
  writeFileSync(
    file,
    `${Object.entries(props)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n')}\n`,
  );
}

export async function startKafkaCluster(opts: KafkaClusterOptions): Promise<KafkaCluster> {
  const n = opts.brokers ?? 3;
  const host = opts.host ?? '127.0.0.1';
  const ports = opts.ports ?? Array.from({ length: n }, (_, i) => 19092 + i);
  const controllerPorts = opts.controllerPorts ?? ports.map((p) => p + 10000);
  if (ports.length !== n || controllerPorts.length !== n) throw new Error(`need ${n} client and controller ports`);
  const output = opts.output ?? ((node, line) => void process.stdout.write(`[${node}] ${line}\n`));
  const timeout = opts.startTimeoutMs ?? 120_000;
  const { classPath } = ensureKafka((l) => output('kafka', l));
  const java = javaBin();
  // class data sharing (AppCDS): the first node ever started records the classes it loaded into an archive
  // at exit; later JVMs map it, which halves their start-up on a busy 2-core machine
  const cds = path.join(kafkaCacheDir(), `cds-${javaVersion(java)}.jsa`);
  const haveCds = existsSync(cds);
  const cdsTmp = `${cds}.${process.pid}-${Date.now()}`;

  const root = path.join(path.resolve(opts.dataDir), `apache-kafka-x${n}`);
  mkdirSync(root, { recursive: true });
  const idFile = path.join(root, 'cluster.id');
  if (!existsSync(idFile)) writeFileSync(idFile, `${randomBytes(16).toString('base64url')}\n`);
  const clusterId = readFileSync(idFile, 'utf8').trim();

  const jvm = (heap: number) => [
    `-Xmx${heap}m`,
    `-Xms${heap}m`,
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    '-XX:+ExitOnOutOfMemoryError',
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${LOG4J}`,
    `-Dkafka.log.level=${process.env.KAFKA_LOG_LEVEL ?? 'WARN'}`,
    ...(haveCds ? [`-XX:SharedArchiveFile=${cds}`] : []),
    '-Xlog:cds*=off',
    ...(opts.jvmOptions ?? []),
    ...(process.env.KAFKA_JVM_OPTIONS?.split(/\s+/).filter(Boolean) ?? []),
    '-cp',
    classPath,
  ];
  const configs: string[] = [];
  const unformatted: string[] = [];
  for (let id = 1; id <= n; id++) {
    const dir = path.join(root, `node-${id}`);
    mkdirSync(dir, { recursive: true });
    const logDir = path.join(dir, 'data');
    const file = path.join(dir, 'server.properties');
    writeProperties(file, nodeProperties(id, { host, ports, controllerPorts, logDir, properties: opts.properties }));
    configs.push(file);
    if (!existsSync(path.join(logDir, 'meta.properties'))) unformatted.push(file);
  }
  // first start: format the nodes' storage, all at once (a short-lived JVM each: C1 only, serial GC)
  await Promise.all(
    unformatted.map((file) =>
      execFileAsync(java, [
        '-Xmx128m',
        '-XX:TieredStopAtLevel=1',
        '-XX:+UseSerialGC',
        ...(haveCds ? [`-XX:SharedArchiveFile=${cds}`] : []),
        `-Dlog4j2.configurationFile=${LOG4J}`,
        '-cp',
        classPath,
        'kafka.tools.StorageTool',
        'format',
        // `--opt=value`: a base64url id may begin with '-', which the tool would take for an option
        `--cluster-id=${clusterId}`,
        '-c',
        file,
      ]),
    ),
  );

  const children: ChildProcess[] = [];
  let stopping = false;
  if (opts.signal?.aborted) throw new Error('start-up aborted');
  let onExit!: (v: { node: number; code: number | null; signal: string | null }) => void;
  const exited = new Promise<{ node: number; code: number | null; signal: string | null }>((r) => {
    onExit = r;
  });
  const started = new Set<number>();
  /** each node's last lines, for the error when one exits during start-up */
  const tails = new Map<number, string[]>();
  for (let id = 1; id <= n; id++) {
    const dumpCds = !haveCds && id === 1;
    const child = spawn(
      java,
      [
        ...jvm(opts.heapMb ?? 256),
        ...(dumpCds ? [`-XX:ArchiveClassesAtExit=${cdsTmp}`] : []),
        'kafka.Kafka',
        configs[id - 1],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    if (dumpCds)
      child.once('exit', () => {
        try {
          if (existsSync(cdsTmp)) renameSync(cdsTmp, cds);
        } catch {
          rmSync(cdsTmp, { force: true });
        }
      });
    for (const stream of [child.stdout, child.stderr]) {
      let buf = '';
      stream.on('data', (d: Buffer) => {
        buf += d.toString();
        let i = buf.indexOf('\n');
        while (i >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line.includes('Kafka Server started')) started.add(id);
          let tail = tails.get(id);
          if (!tail) tails.set(id, (tail = []));
          tail.push(line);
          if (tail.length > 20) tail.shift();
          output(`kafka-${id}`, line);
          i = buf.indexOf('\n');
        }
      });
    }
    child.on('exit', (code, signal) => {
      if (!stopping) onExit({ node: id, code, signal });
    });
    // a launcher that ends without stop() takes its nodes along
    process.once('exit', () => child.kill('SIGKILL'));
    children.push(child);
  }
  const brokers = ports.map((p) => `${host}:${p}`);

  const stop = async (graceMs = 20_000) => {
    stopping = true;
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const done = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await done;
        clearTimeout(timer);
      }),
    );
  };

  try {
    let dead: { node: number; code: number | null } | undefined;
    exited.then((e) => {
      dead = e;
    });
    const deadline = Date.now() + timeout;
    const check = () => {
      if (opts.signal?.aborted) throw new Error('start-up aborted');
      if (dead) {
        const last = (tails.get(dead.node) ?? []).filter((l) => /ERROR|FATAL|Exception|Caused by/.test(l)).slice(-5);
        throw new Error(
          `Apache Kafka node ${dead.node} exited during start-up (code ${dead.code})${last.length ? `:\n${last.join('\n')}` : ''}`,
        );
      }
      if (Date.now() > deadline) throw new Error(`Apache Kafka did not start within ${timeout} ms`);
    };
    while (started.size < n) {
      check();
      await new Promise((r) => setTimeout(r, 100));
    }
    // every node registered and unfenced: Metadata lists all of them
    const kafka = createKafka(brokers, 'kafka-cluster-probe', pino({ level: 'silent' }), {
      retry: { retries: 0 },
      connectionTimeout: 1_000,
    });
    const admin = kafka.admin();
    for (;;) {
      check();
      try {
        await admin.connect();
        const c = await admin.describeCluster();
        if (c.brokers.length >= n && c.controller !== null) break;
      } catch {
        // not yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    await admin.disconnect().catch(() => {});
  } catch (err) {
    await stop(5_000);
    throw err;
  }
  return { brokers, bootstrap: brokers.join(','), clusterId, children, exited, stop };
}

export { KAFKA_VERSION };
