// The deployment manifests and the cluster DDL, checked with standard tools, offline:
// - deploy/compose/compose.yaml against the Compose specification's JSON schema (check-jsonschema's
//   bundled compose-spec), and every project container's environment against services/common/config.ts;
// - deploy/k8s (kustomize build) against Kubernetes 1.37's JSON schemas (kubeconform -strict, with the
//   schemas bundled by the PyPI package kubernetes-validate), its probes against the app's real health
//   routes, its autoscalers' metrics against the metrics the services register;
// - deploy/Dockerfile: Node 24, runtime dependencies only, every file deploy/service.ts imports copied;
// - the migrations rendered for a cluster (CLICKHOUSE_CLUSTER) through ClickHouse's own parser (chDB
//   formatQuery), and unchanged, byte for byte, without one.
// The tools are installed by .ci/run under node_modules/.cache/manifest-tools; a missing tool fails the
// test with the command that installs it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import type { Db } from '../../clickhouse/client.ts';
import { LOCAL_SUFFIX, renderMigrations, schemaMigrationsDdl } from '../../clickhouse/cluster-ddl.ts';
import { loadMigrations, MigrationError, migrate } from '../../clickhouse/migrate.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { healthRoutes } from '../../services/app/health.ts';
import { EnvSchema, loadConfig } from '../../services/common/config.ts';
import { registry } from '../../services/common/metrics.ts';
import { privateDb } from '../helpers/chdb.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TOOLS = path.join(ROOT, 'node_modules/.cache/manifest-tools');
const K8S_VERSION = '1.37.0';

// ---------------------------------------------------------------------------------------------- tools

const INSTALL = {
  kubeconform: `GOBIN=${TOOLS}/bin go install github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0`,
  kustomize: `GOBIN=${TOOLS}/bin go install sigs.k8s.io/kustomize/kustomize/v5@v5.7.1`,
  python: `python3 -m venv ${TOOLS}/venv && ${TOOLS}/venv/bin/pip install check-jsonschema==0.39.0 kubernetes-validate==1.37.0`,
};

function tool(file: string, install: string): string {
  if (!existsSync(file))
    throw new Error(`${path.basename(file)} is not installed (${file}); install it (.ci/run): ${install}`);
  return file;
}

function run(cmd: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw r.error;
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** kubernetes-validate's schemas (refs to `/api/_definitions.json` under a kubernetes.io $id) made local
 *  files kubeconform resolves offline: the same schemas, refs relative, no $id. Written once per version. */
function kubernetesSchemas(): string {
  const out = path.join(TOOLS, 'k8s-schemas');
  const dir = path.join(out, `v${K8S_VERSION}-standalone-strict`);
  if (existsSync(dir)) return out;
  const site = path.join(TOOLS, 'venv/lib');
  const python = existsSync(site) ? readdirSync(site).find((d) => d.startsWith('python')) : undefined;
  const source = python
    ? path.join(site, python, `site-packages/kubernetes_validate/kubernetes-json-schema/v${K8S_VERSION}-local-strict`)
    : '';
  if (!python || !existsSync(source))
    throw new Error(
      `kubernetes-validate's v${K8S_VERSION} schemas are not installed; install (.ci/run): ${INSTALL.python}`,
    );
  const tmp = `${dir}.tmp-${process.pid}`;
  mkdirSync(tmp, { recursive: true });
  for (const file of readdirSync(source)) {
    if (!file.endsWith('.json')) continue;
    const schema = JSON.parse(
      readFileSync(path.join(source, file), 'utf8').replaceAll('"/api/_definitions.json#', '"_definitions.json#'),
    );
    delete schema.$id;
    writeFileSync(path.join(tmp, file), JSON.stringify(schema));
  }
  renameSync(tmp, dir);
  return out;
}

function kustomizeBuild(dir: string): { text: string; docs: Record<string, any>[] } {
  const kustomize = tool(path.join(TOOLS, 'bin/kustomize'), INSTALL.kustomize);
  const r = run(kustomize, ['build', dir]);
  expect(r.status, r.out).toBe(0);
  return { text: r.out, docs: YAML.parseAllDocuments(r.out).map((d) => d.toJS()) };
}

// ------------------------------------------------------------------------------- environment checks

/** Variables read outside config.ts: by deploy/service.ts (the stand-in's body limit), read from its
 *  source so the list cannot drift. */
function variablesReadOutsideConfig(): Set<string> {
  const names = new Set<string>();
  for (const file of ['deploy/service.ts']) {
    const src = readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of src.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)) names.add(m[1]);
  }
  return names;
}
/** read by the C library, not by our code (deploy/Dockerfile sets it) */
const RUNTIME_VARIABLES = ['MALLOC_ARENA_MAX'];
const KNOWN = new Set([...Object.keys(EnvSchema.shape), ...variablesReadOutsideConfig(), ...RUNTIME_VARIABLES]);

/** The image's own ENV (deploy/Dockerfile), under what a manifest sets. */
function dockerfileEnv(): Record<string, string> {
  const text = readFileSync(path.join(ROOT, 'deploy/Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^ENV\s+(.*)$/.exec(line.trim());
    if (!m) continue;
    for (const kv of m[1].matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)) env[kv[1]] = kv[2].replace(/^"|"$/g, '');
  }
  return env;
}

/** What is wrong with the environment one project container is given (empty: nothing). */
function envProblems(service: string, given: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const k of Object.keys(given)) if (!KNOWN.has(k)) problems.push(`${k} is not a variable config.ts knows`);
  const env = { ...dockerfileEnv(), ...given };
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(env);
  } catch (err) {
    return [...problems, (err as Error).message];
  }
  if (config.HOST === '127.0.0.1' || config.HOST === 'localhost')
    problems.push('HOST is loopback: unreachable from other containers');
  if (service === 'clickhouse') return problems;
  // distributed mode: nothing embedded (the registry service serves the registry itself)
  for (const [part, embedded] of Object.entries(config.embedded)) {
    if (part === 'schemaRegistry' && service === 'schema-registry') continue;
    if (embedded) problems.push(`${part} would be embedded: its URL variable is missing`);
  }
  return problems;
}

/** deploy/service.ts's names (read from its source: importing it would run the service). */
function serviceNames(): string[] {
  const src = readFileSync(path.join(ROOT, 'deploy/service.ts'), 'utf8');
  const block = /export const SERVICES[^{]*\{([\s\S]*?)\n\};/.exec(src)?.[1] ?? '';
  const names = [...block.matchAll(/^\s*'?([a-z-]+)'?:/gm)].map((m) => m[1]);
  expect(names.length).toBeGreaterThan(3);
  return ['clickhouse', ...names];
}

// ---------------------------------------------------------------------------------------------- compose

describe('deploy/compose/compose.yaml', () => {
  const file = path.join(ROOT, 'deploy/compose/compose.yaml');
  const compose = YAML.parse(readFileSync(file, 'utf8'), { merge: true }) as {
    services: Record<string, Record<string, any>>;
  };
  const projectServices = Object.entries(compose.services).filter(
    ([, s]) => s.build?.dockerfile === 'deploy/Dockerfile',
  );

  /** `${VAR:-default}` as compose resolves it without an .env file; a `${VAR}` without default is a problem */
  const resolve = (v: unknown) =>
    String(v).replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_all, name: string, dflt?: string) => {
      if (dflt === undefined) throw new Error(`\${${name}} has no default: compose up would need it set`);
      return dflt;
    });

  test('is valid against the Compose specification (check-jsonschema, bundled compose-spec schema)', () => {
    const checker = tool(path.join(TOOLS, 'venv/bin/check-jsonschema'), INSTALL.python);
    const r = run(checker, ['--builtin-schema', 'vendor.compose-spec', file]);
    expect(r.status, r.out).toBe(0);
    // and the check has teeth: an unknown key in a service is refused
    const bad = path.join(os.tmpdir(), `compose-bad-${process.pid}.yaml`);
    writeFileSync(bad, readFileSync(file, 'utf8').replace(/^ {2}redis:\n/m, '  redis:\n    restart_policy: always\n'));
    const refused = run(checker, ['--builtin-schema', 'vendor.compose-spec', bad]);
    rmSync(bad);
    expect(refused.status, refused.out).toBe(1);
    expect(refused.out).toContain('restart_policy');
  });

  test('every service of deploy/service.ts runs in a container of the project image, started by its name', () => {
    const commands = projectServices.map(([, s]) => s.command?.[0]);
    expect(new Set(commands)).toEqual(new Set(serviceNames()));
    const processors = projectServices.find(([, s]) => s.command[0] === 'processors')![1];
    expect(processors.command).toEqual(['processors', '--processor', 'all']);
    expect(processors.deploy.replicas).toBe(2);
  });

  test("the project containers' environment is what config.ts knows, complete for distributed mode", () => {
    for (const [name, s] of projectServices) {
      const env = Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, resolve(v)]));
      expect(envProblems(s.command[0], env), name).toEqual([]);
    }
    // the check fails on what it is meant to catch
    const storefront = compose.services.storefront.environment as Record<string, string>;
    const good = Object.fromEntries(Object.entries(storefront).map(([k, v]) => [k, resolve(v)]));
    expect(envProblems('storefront', { ...good, CLICKHOUSE_CLUSTR: 'x' })).toEqual([
      'CLICKHOUSE_CLUSTR is not a variable config.ts knows',
    ]);
    const { KAFKA_BROKERS: _k, ...noBrokers } = good;
    expect(envProblems('storefront', noBrokers)).toEqual(['kafka would be embedded: its URL variable is missing']);
    expect(envProblems('storefront', { ...good, HTTP_PORT: 'eighty' }).join()).toContain('HTTP_PORT');
  });

  test('every container has a health check; dependencies wait for them (service_healthy)', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      expect(s.healthcheck?.test, `${name} health check`).toBeDefined();
      for (const [dep, cond] of Object.entries((s.depends_on ?? {}) as Record<string, { condition: string }>)) {
        expect(compose.services[dep], `${name} depends on ${dep}`).toBeDefined();
        expect(cond.condition, `${name} → ${dep}`).toBe('service_healthy');
      }
    }
    for (const [name, s] of projectServices) {
      if (s.profiles) continue; // the stand-in: a ClickHouse server of its own
      const deps = Object.keys(s.depends_on);
      expect(deps, name).toEqual(expect.arrayContaining(['kafka-1', 'kafka-2', 'kafka-3', 'clickhouse', 'redis']));
      if (name !== 'schema-registry') expect(deps, name).toContain('schema-registry');
    }
  });

  test('Apache Kafka: 3 KRaft nodes in one quorum, replication factor 3, min.insync.replicas 2', () => {
    const nodes = Object.entries(compose.services).filter(([, s]) => String(s.image).startsWith('apache/kafka:'));
    expect(nodes.map(([n]) => n)).toEqual(['kafka-1', 'kafka-2', 'kafka-3']);
    for (const [name, s] of nodes) {
      const env = s.environment as Record<string, string>;
      expect(env.KAFKA_PROCESS_ROLES).toBe('broker,controller');
      expect(env.KAFKA_CONTROLLER_QUORUM_VOTERS).toBe('1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093');
      expect(env.KAFKA_ADVERTISED_LISTENERS).toBe(`PLAINTEXT://${name}:9092`);
      expect(env.KAFKA_DEFAULT_REPLICATION_FACTOR).toBe('3');
      expect(env.KAFKA_MIN_INSYNC_REPLICAS).toBe('2');
      expect(env.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR).toBe('3');
      expect(env.KAFKA_TRANSACTION_STATE_LOG_MIN_ISR).toBe('2');
    }
    expect(new Set(nodes.map(([, s]) => s.environment.KAFKA_NODE_ID))).toEqual(new Set(['1', '2', '3']));
    const brokers = compose.services.storefront.environment.KAFKA_BROKERS;
    expect(brokers).toBe('kafka-1:9092,kafka-2:9092,kafka-3:9092');
  });
});

// -------------------------------------------------------------------------------------------- Dockerfile

describe('deploy/Dockerfile', () => {
  const text = readFileSync(path.join(ROOT, 'deploy/Dockerfile'), 'utf8');

  test('Node 24, runtime dependencies only, `npm run service -- <name>` as its entry', () => {
    const froms = [...text.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(froms.length).toBeGreaterThan(0);
    for (const f of froms) expect(f).toMatch(/^node:24[-.]/);
    expect(text).toMatch(/^RUN npm ci --omit=dev\b/m);
    expect(text).toMatch(/^ENTRYPOINT \["npm", "run", "--silent", "service", "--"\]$/m);
    expect(Object.keys(dockerfileEnv()).filter((k) => !KNOWN.has(k))).toEqual([]);
  });

  test('every file deploy/service.ts imports is copied into the image, every package it imports is a runtime dependency', () => {
    const copied = [...text.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1].split(/\s+/));
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const seen = new Set<string>();
    const packages = new Set<string>();
    const queue = ['deploy/service.ts'];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const src = readFileSync(path.join(ROOT, file), 'utf8');
      for (const m of src.matchAll(/(?:^import|^export)[^;]*?from '([^']+)'|import\('([^']+)'\)/gms)) {
        if (/^import type /.test(m[0])) continue;
        const spec = m[1] ?? m[2];
        if (spec.startsWith('.')) queue.push(path.relative(ROOT, path.resolve(ROOT, path.dirname(file), spec)));
        else if (!spec.startsWith('node:'))
          packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
      }
    }
    expect(seen.size).toBeGreaterThan(20);
    const notCopied = [...seen].filter((f) => !copied.some((c) => f === c || f.startsWith(`${c}/`)));
    expect(notCopied).toEqual([]);
    const notRuntime = [...packages].filter((p) => !(p in pkg.dependencies));
    expect(notRuntime).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------- k8s

describe('deploy/k8s', () => {
  let base: { text: string; docs: Record<string, any>[] };
  let adapter: { text: string; docs: Record<string, any>[] };
  let cluster: { text: string; docs: Record<string, any>[] };
  beforeAll(() => {
    base = kustomizeBuild('deploy/k8s/base');
    adapter = kustomizeBuild('deploy/k8s/prometheus-adapter');
    cluster = kustomizeBuild('deploy/k8s/overlays/clickhouse-cluster');
  });
  const byKind = (kind: string, docs = base.docs) => docs.filter((d) => d.kind === kind);
  const projectContainers = (docs = base.docs) =>
    byKind('Deployment', docs).flatMap((d) =>
      (d.spec.template.spec.containers as any[])
        .filter((c) => String(c.image).startsWith('storefront-discovery'))
        .map((c) => ({ deployment: d, container: c })),
    );

  test(`kustomize build passes kubeconform -strict against Kubernetes ${K8S_VERSION}'s schemas`, () => {
    const kubeconform = tool(path.join(TOOLS, 'bin/kubeconform'), INSTALL.kubeconform);
    const schemas = kubernetesSchemas();
    const location = `${schemas}/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json`;
    const check = (yaml: string) => {
      const file = path.join(os.tmpdir(), `k8s-${process.pid}-${newUlid()}.yaml`);
      writeFileSync(file, yaml);
      try {
        return run(kubeconform, [
          // one worker: each worker compiles the schemas again (4 workers took 3× as long on 2 cores)
          '-n',
          '1',
          '-strict',
          '-summary',
          '-kubernetes-version',
          K8S_VERSION,
          '-schema-location',
          location,
          file,
        ]);
      } finally {
        rmSync(file);
      }
    };
    for (const [name, built] of [
      ['base', base],
      ['prometheus-adapter', adapter],
      ['overlays/clickhouse-cluster', cluster],
    ] as const) {
      const r = check(built.text);
      expect(r.status, `${name}: ${r.out}`).toBe(0);
      expect(r.out, name).toContain(`Valid: ${built.docs.length}, Invalid: 0, Errors: 0, Skipped: 0`);
    }
    // the schemas are strict: a misspelt field is refused
    const refused = check(base.text.replace('readinessProbe:', 'readynessProbe:'));
    expect(refused.status, refused.out).toBe(1);
    expect(refused.out).toContain('readynessProbe');
  });

  test('a Deployment per app service of deploy/service.ts, started by its name; ClickHouse, Kafka, Redis as StatefulSets', () => {
    const started = projectContainers().map(({ container }) => container.args[0]);
    expect(new Set(started)).toEqual(new Set(serviceNames().filter((n) => n !== 'clickhouse')));
    expect(
      byKind('StatefulSet')
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(['clickhouse', 'kafka', 'redis']);
    const kafka = byKind('StatefulSet').find((s) => s.metadata.name === 'kafka')!;
    expect(kafka.spec.replicas).toBe(3);
    const env = Object.fromEntries(
      (kafka.spec.template.spec.containers[0].env as { name: string; value: string }[]).map((e) => [e.name, e.value]),
    );
    expect(env.KAFKA_DEFAULT_REPLICATION_FACTOR).toBe('3');
    expect(env.KAFKA_MIN_INSYNC_REPLICAS).toBe('2');
    expect(env.KAFKA_CONTROLLER_QUORUM_VOTERS.split(',')).toHaveLength(3);
  });

  test("probes ask the app's real health routes; every container has requests and a memory limit", async () => {
    const app = Fastify();
    await app.register(healthRoutes, { checks: {} });
    for (const { deployment, container } of projectContainers()) {
      const name = deployment.metadata.name;
      const ports = new Set((container.ports as { name: string }[]).map((p) => p.name));
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const get = container[probe]?.httpGet;
        expect(get, `${name} ${probe}`).toBeDefined();
        expect(ports.has(get.port), `${name} ${probe} port ${get.port}`).toBe(true);
        const res = await app.inject({ method: 'GET', url: get.path });
        expect(res.statusCode, `${name} ${probe} ${get.path}`).toBe(200);
      }
      expect(container.readinessProbe.httpGet.path, name).toBe('/readyz');
    }
    await app.close();
    for (const kind of ['Deployment', 'StatefulSet']) {
      for (const d of byKind(kind)) {
        for (const c of d.spec.template.spec.containers) {
          expect(c.resources?.requests?.cpu, `${d.metadata.name} cpu request`).toBeDefined();
          expect(c.resources?.requests?.memory, `${d.metadata.name} memory request`).toBeDefined();
          expect(c.resources?.limits?.memory, `${d.metadata.name} memory limit`).toBeDefined();
        }
      }
    }
  });

  /** each project container's environment as Kubernetes assembles it (envFrom ConfigMap/Secret, then env) */
  function containerEnvs(docs: Record<string, any>[]) {
    const data = (kind: string, name: string) => {
      const d = docs.find((x) => x.kind === kind && x.metadata.name === name);
      expect(d, `${kind} ${name}`).toBeDefined();
      return (d!.data ?? d!.stringData ?? {}) as Record<string, string>;
    };
    return projectContainers(docs).map(({ deployment, container }) => {
      const env: Record<string, string> = {};
      for (const from of container.envFrom ?? []) {
        Object.assign(
          env,
          from.configMapRef ? data('ConfigMap', from.configMapRef.name) : data('Secret', from.secretRef.name),
        );
      }
      for (const e of container.env ?? []) env[e.name] = e.value;
      return { name: deployment.metadata.name as string, service: container.args[0] as string, env };
    });
  }

  test("the project containers' environment is what config.ts knows, complete for distributed mode", () => {
    for (const docs of [base.docs, cluster.docs]) {
      const envs = containerEnvs(docs);
      expect(envs.length).toBe(serviceNames().length - 1);
      for (const { name, service, env } of envs) expect(envProblems(service, env), name).toEqual([]);
    }
  });

  test('the cluster overlay leaves the single ClickHouse server out and has the services migrate for the cluster', () => {
    expect(
      byKind('StatefulSet', cluster.docs)
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(['kafka', 'redis']);
    expect(cluster.docs.some((d) => d.kind === 'Service' && d.metadata.name === 'clickhouse')).toBe(false);
    const clusterOf = (env: Record<string, string>) => loadConfig({ ...dockerfileEnv(), ...env }).CLICKHOUSE_CLUSTER;
    for (const { name, env } of containerEnvs(cluster.docs)) {
      expect(clusterOf(env), name).toBe('discovery');
      expect(env.CLICKHOUSE_URL, name).toBe('http://clickhouse-discovery:8123');
    }
    for (const { name, env } of containerEnvs(base.docs)) expect(clusterOf(env), name).toBeUndefined();
  });

  test('autoscalers scale on metrics the services register, served by the adapter rules; processors never beyond the partitions', async () => {
    // the modules register their metrics when loaded, as in the services
    await import('../../services/beacon/module.ts');
    await import('../../services/storefront/module.ts');
    await import('../../streams/module.ts');
    const rules = YAML.parse(adapter.docs[0].data['config.yaml']) as {
      rules: { seriesQuery: string; name: { as: string } }[];
      externalRules: { seriesQuery: string; name: { as: string } }[];
    };
    const served = new Map([...rules.rules, ...rules.externalRules].map((r) => [r.name.as, r.seriesQuery]));
    const hpas = byKind('HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(['intake', 'processors', 'storefront']);
    const used: string[] = [];
    for (const hpa of hpas) {
      for (const m of hpa.spec.metrics as Record<string, any>[]) {
        if (m.type === 'Resource') continue;
        const name: string = (m.pods ?? m.external ?? m.object).metric.name;
        used.push(name);
        const histogramPart = /^(.*)_(count|sum|bucket)$/.exec(name);
        const metric = registry.getSingleMetric(histogramPart?.[1] ?? name) ?? registry.getSingleMetric(name);
        expect(metric, `${hpa.metadata.name}: ${name} is registered`).toBeDefined();
        if (histogramPart) expect((await metric!.get()).type, name).toBe('histogram');
        expect(served.get(name), `${name}: an adapter rule`).toMatch(new RegExp(`^${name}\\{`));
      }
    }
    expect(used.sort()).toEqual([
      'beacon_requests_total',
      'storefront_request_duration_seconds_count',
      'stream_consumer_lag',
    ]);
    const processors = hpas.find((h) => h.spec.scaleTargetRef.name === 'processors')!;
    const widest = Math.max(...Object.values(TOPICS).map((t) => t.partitions));
    expect(processors.spec.maxReplicas).toBeLessThanOrEqual(widest);
  });
});

// ------------------------------------------------------------------------------------------- cluster DDL

/** A real chDB database whose statements are recorded on their way in. */
function recording(db: Db): { db: Db; commands: string[] } {
  const commands: string[] = [];
  const proxy = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'command')
        return (sql: string, params?: Record<string, unknown>) => {
          commands.push(sql);
          return target.command(sql, params);
        };
      return Reflect.get(target, prop, receiver);
    },
  });
  return { db: proxy, commands };
}

describe('migrations rendered for a ClickHouse cluster (CLICKHOUSE_CLUSTER)', () => {
  let db: Db;
  const saved = process.env.CLICKHOUSE_CLUSTER;
  beforeAll(async () => {
    delete process.env.CLICKHOUSE_CLUSTER;
    db = await privateDb(`manifests_${newUlid().toLowerCase()}`);
  });
  afterAll(async () => {
    if (saved !== undefined) process.env.CLICKHOUSE_CLUSTER = saved;
    await db?.close();
  });

  test('without a cluster, the statements sent are the files’ own, byte for byte', async () => {
    const { db: rec, commands } = recording(db);
    const result = await migrate(rec);
    const migrations = loadMigrations();
    expect(result.applied).toEqual(migrations.map((m) => m.file));
    expect(commands).toEqual([
      // schema_migrations as it always was
      `CREATE TABLE IF NOT EXISTS schema_migrations (
      version UInt32,
      name String,
      checksum String,
      applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
    ) ENGINE = MergeTree ORDER BY version`,
      ...migrations.flatMap((m) =>
        readFileSync(path.join(ROOT, 'clickhouse/migrations', m.file), 'utf8')
          .split('\n')
          .filter((l) => !l.trimStart().startsWith('--'))
          .join('\n')
          .split(/;\s*(?:\n|$)/)
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    ]);
    expect(renderMigrations(migrations, undefined)).toEqual(migrations.map((m) => m.statements));
  });

  test("with a cluster, every rendered statement is parsed by ClickHouse's own parser and says what it should", async () => {
    const migrations = loadMigrations();
    const statements = [
      schemaMigrationsDdl('discovery'),
      ...renderMigrations(migrations, { cluster: 'discovery', database: 'discovery' }).flat(),
    ];
    const formatted: string[] = [];
    for (const sql of statements) {
      const [row] = await db.query<{ f: string }>('SELECT formatQuery({sql:String}) AS f', { sql });
      formatted.push(row.f);
    }
    const created = new Map<string, string>();
    for (const f of formatted) {
      expect(f.split('\n')[0], f.slice(0, 200)).toMatch(/^(CREATE|ALTER) .* ON CLUSTER discovery\b/);
      const m = /^CREATE (TABLE|VIEW|MATERIALIZED VIEW) IF NOT EXISTS (\w+) ON CLUSTER/.exec(f);
      if (m) created.set(m[2], f);
    }
    const tables = migrations.flatMap((m) =>
      m.statements.flatMap((s) => /^CREATE TABLE IF NOT EXISTS (\w+)/.exec(s)?.[1] ?? []),
    );
    expect(tables.length).toBeGreaterThan(25);
    for (const t of tables) {
      const local = created.get(`${t}${LOCAL_SUFFIX}`);
      expect(local, `${t}_local`).toMatch(
        /\nENGINE = Replicated\w*MergeTree\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/\{table\}', '\{replica\}'/,
      );
      expect(local).not.toContain('non_replicated_deduplication_window');
      const key = t === 'site_events_raw' ? 'site' : 'store_id';
      expect(created.get(t), t).toContain(
        `AS ${t}_local\nENGINE = Distributed('discovery', 'discovery', '${t}_local', cityHash64(${key}))`,
      );
    }
    // materialized views: on each shard, from a local table into a local table
    const mv = created.get('product_daily_engagement_mv')!;
    expect(mv).toContain('TO product_daily_engagement_local');
    expect(mv).toContain('FROM events_raw_local');
    expect(formatted.filter((f) => f.startsWith('ALTER TABLE events_raw_local ON CLUSTER discovery')).length).toBe(2);
    expect(formatted.filter((f) => f.startsWith('ALTER TABLE events_raw ON CLUSTER discovery')).length).toBe(1);
    // and the parser has teeth: a malformed statement is refused
    await expect(db.query('SELECT formatQuery({sql:String})', { sql: 'CREATE TABLE x ON CLUSTER (' })).rejects.toThrow(
      /SYNTAX_ERROR|Syntax error/,
    );
  });

  test('migrate() with a cluster sends the rendered DDL (this engine has no such cluster and says so)', async () => {
    const fresh = await privateDb(`manifests_cluster_${newUlid().toLowerCase()}`);
    try {
      const { db: rec, commands } = recording(fresh);
      await expect(migrate(rec, { cluster: 'discovery' })).rejects.toThrow(/discovery.*not found|CLUSTER_DOESNT_EXIST/);
      expect(commands).toEqual([schemaMigrationsDdl('discovery')]);
    } finally {
      await fresh.close();
    }
  });

  test('a statement the cluster rendering does not know is refused before anything runs', async () => {
    const dir = path.join(os.tmpdir(), `migrations-${process.pid}-${newUlid()}`);
    mkdirSync(dir);
    writeFileSync(
      path.join(dir, '0001_t.sql'),
      'CREATE TABLE IF NOT EXISTS t (store_id String) ENGINE = MergeTree ORDER BY store_id;\n',
    );
    writeFileSync(
      path.join(dir, '0002_d.sql'),
      'CREATE DICTIONARY IF NOT EXISTS d (k UInt64) PRIMARY KEY k SOURCE(NULL()) LAYOUT(FLAT()) LIFETIME(0);\n',
    );
    const fresh = await privateDb(`manifests_refused_${newUlid().toLowerCase()}`);
    try {
      const { db: rec, commands } = recording(fresh);
      await expect(migrate(rec, { dir, cluster: 'discovery' })).rejects.toThrow(MigrationError);
      await expect(migrate(rec, { dir, cluster: 'discovery' })).rejects.toThrow('0002_d.sql: no cluster rendering for');
      expect(commands).toEqual([]);
    } finally {
      await fresh.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
