import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../services/common/config.ts';

describe('configuration', () => {
  it('has defaults that run the single-node stack', () => {
    const c = loadConfig({});
    expect(c.HTTP_PORT).toBe(3000);
    expect(c.kafkaBrokers).toEqual(['127.0.0.1:9092']);
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.schemaRegistryUrl).toBe('http://127.0.0.1:8081');
    expect(c.embedded).toEqual({ kafka: true, clickhouse: true, redis: true, schemaRegistry: true });
  });

  it('uses configured servers instead of embedded ones', () => {
    const c = loadConfig({
      KAFKA_BROKERS: 'k1:9092,k2:9093',
      REDIS_URL: 'redis://r:6380',
      CLICKHOUSE_URL: 'http://ch:8123',
    });
    expect(c.kafkaBrokers).toEqual(['k1:9092', 'k2:9093']);
    expect(c.embedded).toMatchObject({ kafka: false, redis: false, clickhouse: false, schemaRegistry: true });
  });

  it('names every bad variable', () => {
    try {
      loadConfig({ HTTP_PORT: '70000', KAFKA_BROKERS: 'not a broker', LOG_LEVEL: 'loud' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const vars = (err as ConfigError).issues.map((i) => i.variable).sort();
      expect(vars).toEqual(['HTTP_PORT', 'KAFKA_BROKERS', 'LOG_LEVEL']);
      expect((err as Error).message).toContain('HTTP_PORT');
    }
  });

  it('stops start-up of the app and of the launcher with a message naming the variable', () => {
    for (const entry of ['services/app/main.ts', 'deploy/local/start.ts']) {
      const r = spawnSync(process.execPath, [entry], {
        env: { ...process.env, HTTP_PORT: 'abc' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status).toBe(78);
      expect(r.stderr).toMatch(/HTTP_PORT: .*"abc"/);
    }
  });
});
