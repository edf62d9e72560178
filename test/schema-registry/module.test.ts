// The app module in both modes: embedded (serves the registry from the topic on its own port) and
// external (SCHEMA_REGISTRY_URL set: nothing served, platform schemas registered there), each with its
// readiness check and announced URL.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTopics, platformTopics, topicConfigs } from '../../services/common/kafka/index.ts';
import type { AppContext } from '../../services/app/context.ts';
import type { Check } from '../../services/app/health.ts';
import { loadConfig } from '../../services/common/config.ts';
import { schemaRegistryModule } from '../../services/schema-registry/module.ts';
import { type RegistryFixture, sr, startRegistryFixture } from './fixture.ts';

let fx: RegistryFixture;
beforeAll(async () => {
  fx = await startRegistryFixture();
});
afterAll(async () => {
  await fx?.close();
});

function context(env: Record<string, string>) {
  const checks: Record<string, Check> = {};
  const urls: Record<string, string> = {};
  const closers: (() => unknown)[] = [];
  const config = loadConfig({ HOST: '127.0.0.1', KAFKA_BROKERS: fx.brokers.join(','), ...env });
  const ctx = {
    config,
    logger: pino({ level: 'warn' }),
    kafka: fx.kafka,
    addReadinessCheck: (name: string, check: Check) => {
      checks[name] = check;
    },
    onClose: (fn: () => unknown) => {
      closers.push(fn);
    },
    announce: (label: string, url: string) => {
      urls[label] = url;
    },
  } as unknown as AppContext;
  return {
    ctx,
    checks,
    urls,
    close: async () => {
      for (const fn of closers.reverse()) await fn();
    },
  };
}

describe('schemaRegistryModule', () => {
  it('embedded: serves the registry on its own port from the prefixed _schemas topic and registers the platform subjects', async () => {
    const { ctx, checks, urls, close } = context({
      SCHEMA_REGISTRY_URL: '',
      SCHEMA_REGISTRY_PORT: '0',
      KAFKA_TOPIC_PREFIX: 'mod-embedded.',
    });
    // in the app the composer creates every topic before the modules start (services/app/topics.ts)
    await ensureTopics(fx.kafka, topicConfigs(ctx.config, ['schemas']), ctx.logger);
    await schemaRegistryModule.start(ctx);
    try {
      expect(urls.schemaRegistry).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      await expect(checks.schemaRegistry()).resolves.toBeUndefined();
      const subjects = (await sr(urls.schemaRegistry, 'GET', '/subjects')).body as string[];
      expect(subjects.sort()).toEqual(
        Object.values(platformTopics({ KAFKA_TOPIC_PREFIX: 'mod-embedded.' }))
          .map((t) => `${t}-value`)
          .sort(),
      );
    } finally {
      await close();
    }
    await expect(fetch(`${urls.schemaRegistry}/subjects`)).rejects.toThrow();
  });

  it('external: registers the platform subjects in the configured registry and checks it for readiness', async () => {
    const url = fx.registry.url.replace('http://', 'http://user:secret@');
    const { ctx, checks, urls, close } = context({ SCHEMA_REGISTRY_URL: url, KAFKA_TOPIC_PREFIX: 'mod-external.' });
    await schemaRegistryModule.start(ctx);
    try {
      expect(urls.schemaRegistry).toBe(fx.registry.url);
      await expect(checks.schemaRegistry()).resolves.toBeUndefined();
      const subjects = (await sr(fx.registry.url, 'GET', '/subjects')).body as string[];
      for (const t of Object.values(platformTopics({ KAFKA_TOPIC_PREFIX: 'mod-external.' })))
        expect(subjects).toContain(`${t}-value`);
    } finally {
      await close();
    }
  });
});
