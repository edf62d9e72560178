// The storefront SDK: the API client (client.ts) and the tracking script (tracking.ts). This file is the
// entry of the bundle the app serves at /sdk/v1/storefront-sdk.js (bundle.ts) and of `import … from
// 'services/sdk/index.ts'` in the repository (Node, with its types).
export type * from './client.ts';
export { API_PREFIX, createClient } from './client.ts';
export type * from './tracking.ts';
export { createTracker } from './tracking.ts';
export { ulid } from './ulid.ts';
export { SDK_BUNDLE_PATH, SDK_NAME, SDK_VERSION } from './version.ts';
