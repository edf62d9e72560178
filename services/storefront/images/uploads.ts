// Uploaded images (POST /images/upload): what image search needs of them — their features, not their
// bytes — kept in Redis per store for 24 hours (`sf:img:<store>:<uuid>`, EX). Redis rather than DATA_DIR:
// every app instance behind a load balancer sees an upload at once, the TTL expires it without a sweeper,
// and a few hundred bytes per image cost nothing; the image itself is not kept (decoded once, described,
// dropped). An id of another store is simply unknown (the key is store-scoped).
import type { Redis } from 'ioredis';
import { UPLOAD_TTL_SECONDS } from '../../../schemas/images.ts';
import { featuresFromJson, featuresToJson, type ImageFeatures } from '../../common/image-features.ts';

export interface UploadStore {
  put(storeId: string, imageId: string, features: ImageFeatures): Promise<void>;
  /** null when unknown or expired */
  get(storeId: string, imageId: string): Promise<ImageFeatures | null>;
}

const key = (storeId: string, imageId: string) => `sf:img:${storeId}:${imageId.toLowerCase()}`;

export function redisUploads(redis: Redis, ttlSeconds = UPLOAD_TTL_SECONDS): UploadStore {
  return {
    async put(storeId, imageId, features) {
      await redis.set(key(storeId, imageId), JSON.stringify(featuresToJson(features)), 'EX', ttlSeconds);
    },
    async get(storeId, imageId) {
      const text = await redis.get(key(storeId, imageId));
      return text ? featuresFromJson(JSON.parse(text)) : null;
    },
  };
}

/** In memory (a plugin mounted without Redis: tools, documentation); entries expire like Redis's. */
export function memoryUploads(ttlSeconds = UPLOAD_TTL_SECONDS): UploadStore {
  const m = new Map<string, { at: number; f: ImageFeatures }>();
  return {
    async put(storeId, imageId, features) {
      m.set(key(storeId, imageId), { at: Date.now(), f: features });
      if (m.size > 10_000) m.delete(m.keys().next().value as string);
    },
    async get(storeId, imageId) {
      const e = m.get(key(storeId, imageId));
      return e && Date.now() - e.at < ttlSeconds * 1000 ? e.f : null;
    },
  };
}
