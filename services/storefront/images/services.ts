// What content search and image search need, built once per app (services/storefront/module.ts): the
// image index (agg:images), the content index (agg:catalog content changes), the upload store (Redis)
// and the image feature provider (the configured one: the image processors describe the catalog with the
// same, and the image index keeps only that model's features). `inertDiscovery` is what a plugin mounted without them gets (tests of
// other endpoints, tools): no images, no content (a content search then answers empty), uploads in memory.
import type { Redis } from 'ioredis';
import type { Db } from '../../../clickhouse/client.ts';
import {
  type ImageFeatureProvider,
  type ImageFeatureSettings,
  imageFeatureProvider,
} from '../../common/image-features.ts';
import type { Logger } from '../../common/logger.ts';
import { ContentIndex, type StoreContent } from '../content/index.ts';
import { ImageIndex, StoreImages } from './index.ts';
import { memoryUploads, redisUploads, type UploadStore } from './uploads.ts';

export interface DiscoveryServices {
  content: { get(storeId: string): Promise<StoreContent> };
  images: { get(storeId: string): Promise<StoreImages> };
  uploads: UploadStore;
  provider: ImageFeatureProvider;
}

export async function createDiscoveryServices(o: {
  db: Db;
  redis: Redis;
  /** a dedicated subscriber connection (agg:images and agg:catalog); none: no live updates */
  subscriber?: Redis;
  logger: Logger;
  /** the image feature provider: the app's configuration (IMAGE_FEATURES, …), or a model id; default local-v1 */
  model?: string | ImageFeatureSettings;
}): Promise<DiscoveryServices & { imageIndex: ImageIndex; contentIndex: ContentIndex; close(): void }> {
  const provider = imageFeatureProvider(o.model);
  const imageIndex = new ImageIndex({ db: o.db, subscriber: o.subscriber, logger: o.logger, model: provider.model });
  const contentIndex = new ContentIndex({ db: o.db, subscriber: o.subscriber, logger: o.logger });
  await imageIndex.start();
  await contentIndex.start();
  return {
    content: contentIndex,
    images: imageIndex,
    uploads: redisUploads(o.redis),
    provider,
    imageIndex,
    contentIndex,
    close: () => contentIndex.close(),
  };
}

export function inertDiscovery(): DiscoveryServices {
  return {
    content: { get: () => Promise.reject(new Error('no content source configured')) },
    images: { get: async (storeId) => new StoreImages(storeId) },
    uploads: memoryUploads(),
    provider: imageFeatureProvider(),
  };
}
