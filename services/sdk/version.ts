// The SDK's name and version: sent as `X-SDK-Client: <name>/<version>` on every call (the read API answers
// 425 + Retry-After to a prepared search not ready yet only for named clients at 1.0.0 or later) and part
// of the served bundle's URL (`/sdk/v<major>/storefront-sdk.js`).
export const SDK_NAME = 'storefront-sdk';
export const SDK_VERSION = '1.0.0';
export const SDK_MAJOR = SDK_VERSION.split('.')[0];
/** where the app serves the bundle */
export const SDK_BUNDLE_PATH = `/sdk/v${SDK_MAJOR}/storefront-sdk.js`;
