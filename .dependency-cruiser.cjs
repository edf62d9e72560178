// Folder rules (DESIGN §3), checked by `npm run deps` inside `npm test`. Each rule names who may not
// import what; a violation fails the run with the importing file and the imported one.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'schemas-import-nothing-of-ours',
      comment: 'schemas/ holds the contracts: it imports only schemas/ and npm packages',
      severity: 'error',
      from: { path: '^schemas/' },
      to: { path: '^(services|streams|clickhouse|deploy|bench|test)/' },
    },
    {
      name: 'broker-imports-nothing-of-ours',
      comment: 'the embedded broker is a product of its own: it imports only services/kafka-broker/',
      severity: 'error',
      from: { path: '^services/kafka-broker/' },
      to: { path: '^(schemas|services|streams|clickhouse|deploy|bench)/', pathNot: '^services/kafka-broker/' },
    },
    {
      name: 'read-side-never-imports-processors',
      comment: 'the read API and the site read views; they never import stream processors or their runtime',
      severity: 'error',
      from: { path: '^services/(storefront|site)/' },
      to: { path: '^streams/' },
    },
    {
      name: 'services-never-import-streams',
      comment:
        'processors live in streams/ and depend on services/common only; the composer (services/app) alone wires them in',
      severity: 'error',
      from: { path: '^services/', pathNot: '^services/app/' },
      to: { path: '^streams/' },
    },
    {
      name: 'streams-never-import-http-services',
      comment: 'processors know no endpoints',
      severity: 'error',
      from: { path: '^streams/' },
      to: { path: '^services/(storefront|beacon|site)/' },
    },
    {
      name: 'clickhouse-imports-neither-services-nor-streams',
      comment:
        'the data layer (migrations, client, query helpers) knows no service and no processor; the shared plumbing (services/common: config, logger, metrics) is all it may use',
      severity: 'error',
      from: { path: '^clickhouse/' },
      to: { path: '^(services/|streams/|deploy/)', pathNot: '^services/common/' },
    },
    {
      name: 'kafkajs-only-in-its-adapter',
      comment: 'kafkajs (and its swapped internal modules) is reached through services/common/kafka/ only',
      severity: 'error',
      from: {
        path: '^(schemas|services|streams|clickhouse|deploy|bench)/',
        pathNot: '^services/common/kafka/kafkajs/',
      },
      to: { path: 'node_modules/kafkajs/' },
    },
    {
      name: 'ulids-through-common-ids',
      comment:
        "ids are minted by services/common/ids.ts (a pooled CSPRNG); the ulid package's default source costs ≈ 37 µs an id. The SDK runs in browsers and keeps its own; the ids test compares against the package",
      severity: 'error',
      from: {
        path: '^(schemas|services|streams|clickhouse|deploy|bench|test)/',
        pathNot: '^services/common/ids\\.ts$|^services/sdk/|^test/foundation/ids\\.test\\.ts$',
      },
      to: { path: 'node_modules/ulid/' },
    },
    {
      name: 'no-cycles-between-folders',
      comment: 'a cycle that crosses top-level folders means a shape or a helper lives in the wrong one',
      severity: 'error',
      from: { path: '^(schemas|services|streams|clickhouse|deploy|bench)/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^data/|^bench/out/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
