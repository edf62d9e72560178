// Apache Kafka from Maven Central: `ensureKafka()` copies org.apache.kafka:kafka_2.13 (the broker, with
// kafka-clients, the KRaft controller and every runtime dependency; deploy/kafka/pom.xml) into one cache
// directory with `mvn dependency:copy-dependencies`, once. Later calls find the directory complete and do
// not run Maven (offline); Maven's own ~/.m2 cache makes a re-copy after `npm ci` offline too.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
export const POM = path.join(HERE, 'pom.xml');
export const KAFKA_VERSION = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(POM, 'utf8'))![1];

/** Where the jars go: KAFKA_CACHE_DIR, or node_modules/.cache/apache-kafka-<version>. */
export function kafkaCacheDir(): string {
  return process.env.KAFKA_CACHE_DIR || path.join(ROOT, 'node_modules/.cache', `apache-kafka-${KAFKA_VERSION}`);
}

export class KafkaSetupError extends Error {}

/** Java (17+) on PATH or under JAVA_HOME; throws a message naming what to install otherwise. */
export function javaBin(tool: 'java' | 'javac' = 'java'): string {
  const candidates = [process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', tool) : '', tool].filter(Boolean);
  for (const bin of candidates) {
    const r = spawnSync(bin, ['-version'], { encoding: 'utf8' });
    if (r.status !== 0) continue;
    const m = /version "(\d+)/.exec(`${r.stderr}${r.stdout}`);
    if (m && Number(m[1]) < 17)
      throw new KafkaSetupError(`Apache Kafka ${KAFKA_VERSION} needs Java 17+, ${bin} is ${m[1]}`);
    return bin;
  }
  throw new KafkaSetupError(
    `${tool} (Java 17+) is not installed. Install it with:\n  sudo apt-get install -y openjdk-17-jdk-headless`,
  );
}

/** The full version of a Java binary (e.g. 17.0.15), for naming files only that JVM can use. */
export function javaVersion(java: string): string {
  const r = spawnSync(java, ['-XshowSettings:properties', '-version'], { encoding: 'utf8' });
  return /java\.runtime\.version = (\S+)/.exec(`${r.stderr}${r.stdout}`)?.[1]?.replace(/[^\w.+-]/g, '_') ?? 'unknown';
}

/**
 * The class path of Apache Kafka (broker and clients): the jars in the cache directory, fetched with Maven
 * on the first call. `log` receives one line when Maven runs.
 */
export function ensureKafka(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): {
  libDir: string;
  classPath: string;
} {
  const cache = kafkaCacheDir();
  const libDir = path.join(cache, 'lib');
  const marker = path.join(cache, 'complete');
  if (!existsSync(marker)) {
    javaBin();
    if (spawnSync('mvn', ['-v']).status !== 0)
      throw new KafkaSetupError(
        'mvn (Apache Maven) is not installed. Install it with:\n  sudo apt-get install -y maven',
      );
    log(`fetching Apache Kafka ${KAFKA_VERSION} from Maven Central into ${cache} (once)…`);
    mkdirSync(cache, { recursive: true });
    const tmp = `${libDir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    execFileSync(
      'mvn',
      [
        '-q',
        '-B',
        '-Dstyle.color=never',
        '-f',
        POM,
        'dependency:copy-dependencies',
        `-DoutputDirectory=${tmp}`,
        '-DincludeScope=runtime',
      ],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    // several processes may fetch at once (parallel test files): the first complete copy wins and is never
    // replaced (its JVMs may be running from it); a leftover of an interrupted fetch (no marker) is replaced
    if (!existsSync(marker)) {
      if (existsSync(libDir) && !existsSync(marker)) rmSync(libDir, { recursive: true, force: true });
      try {
        renameSync(tmp, libDir);
        writeFileSync(marker, `${KAFKA_VERSION}\n`);
      } catch {
        // another process renamed its copy first
      }
    }
    rmSync(tmp, { recursive: true, force: true });
  }
  const jars = readdirSync(libDir).filter((f) => f.endsWith('.jar'));
  if (!jars.some((j) => j.startsWith('kafka_2.13-')))
    throw new KafkaSetupError(`${libDir} holds no kafka_2.13 jar; delete ${cache} and run again`);
  return { libDir, classPath: jars.map((j) => path.join(libDir, j)).join(':') };
}

// `node deploy/kafka/fetch.ts`: fetch and print the class path directory (CI warms the cache with it)
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${ensureKafka().libDir}\n`);
}
