// Dedup claims benchmark (streams/runtime/claims.ts, issue #21 memory): `node bench/claims.ts [claims]`
//
// A real redis-server of its own. The claims of N ids (ULIDs, 3 stores, chunks of 1 000 as the processors
// send them) are made with the two older time buckets already holding as many, as in steady state, then
// read again as a replay would. Prints Redis' memory per claim (`used_memory` before and after) next to
// the same claims as fields of one hash per store (the layout before the buckets were sharded: Redis
// keeps a hash that large as a hash table), and Redis' CPU per claim (`INFO commandstats` of the script)
// for the claim and re-read passes. Figures under "claims" in bench/out/latest.json.
import { newUlid } from '../services/common/ids.ts';
import { createRedis } from '../services/common/redis.ts';
import { Claims } from '../streams/runtime/claims.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { recordFigures } from './out.ts';

const N = Number(process.argv[2] ?? 200_000);
const TOPIC = 'storefront.events.v1';
const HORIZON_HOURS = 72;
const server = await startRedis();
const redis = createRedis(server.url);
const line = (label: string, value: string) => process.stdout.write(`  ${label.padEnd(64)} ${value}\n`);
const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
const scriptMicros = async () =>
  Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
const idsOf = (n: number) => Array.from({ length: n }, (_, i) => `s${i % 3}:${newUlid()}`);

async function claimAll(claims: Claims, ids: string[], partition: number): Promise<number> {
  let owners = 0;
  for (let i = 0; i < ids.length; i += 1_000) {
    const chunk = ids.slice(i, i + 1_000).map((key, j) => ({ key, position: `${TOPIC}/${partition}/${i + j}` }));
    owners += (await claims.claim(TOPIC, chunk)).filter(Boolean).length;
  }
  return owners;
}

process.stdout.write(
  `dedup claims (redis-server, ${N.toLocaleString('en-US')} claims over 3 stores, chunks of 1 000)\n`,
);
try {
  const claims = new Claims(redis, HORIZON_HOURS);
  // the two older buckets, as full as the current one will be
  const realNow = Date.now;
  for (const back of [2, 1]) {
    Date.now = () => realNow() - back * (HORIZON_HOURS / 2) * 3_600_000;
    await claimAll(claims, idsOf(N), 1);
  }
  Date.now = realNow;
  const ids = idsOf(N);
  await redis.config('RESETSTAT');
  const before = await usedMemory();
  const claimed = await claimAll(claims, ids, 0);
  const bytes = ((await usedMemory()) - before) / N;
  const claimUs = (await scriptMicros()) / N;
  await redis.config('RESETSTAT');
  const reread = await claimAll(claims, ids, 0);
  const rereadUs = (await scriptMicros()) / N;
  if (claimed !== N || reread !== N) throw new Error(`expected ${N} owners, got ${claimed} and ${reread}`);

  // the baseline: the same fields in one hash per store
  await redis.flushall();
  const base = await usedMemory();
  for (let i = 0; i < ids.length; i += 1_000) {
    const pipe = redis.pipeline();
    ids.slice(i, i + 1_000).forEach((key, j) => {
      const [store, id] = key.split(':');
      pipe.hset(`baseline:{${store}}`, id, `0/${i + j}`);
    });
    await pipe.exec();
  }
  const oneHash = ((await usedMemory()) - base) / N;

  line('Redis memory per claim (used_memory)', `${bytes.toFixed(1)} B`);
  line('  baseline: the same claims as fields of one hash per store', `${oneHash.toFixed(1)} B`);
  line('Redis CPU per claim, claiming (3 buckets looked up, 1 written)', `${claimUs.toFixed(2)} µs`);
  line('Redis CPU per claim, re-read (a replay)', `${rereadUs.toFixed(2)} µs`);
  recordFigures('claims', {
    claims: N,
    bytes_per_claim: bytes,
    baseline_one_hash_bytes_per_claim: oneHash,
    redis_us_per_claim: claimUs,
    redis_us_per_reread: rereadUs,
  });
} finally {
  redis.disconnect();
  await server.stop();
}
