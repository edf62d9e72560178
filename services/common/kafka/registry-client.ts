// A small client for the Confluent Schema Registry REST API (ours in services/schema-registry, or any
// Confluent-compatible one): what the value codec needs, with timeouts and retries on transient errors.
const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

export class RegistryError extends Error {
  readonly status: number;
  /** Confluent error_code (40401, 409, 42201, …); 0 when the request did not get an answer */
  readonly errorCode: number;
  constructor(status: number, errorCode: number, message: string) {
    super(message);
    this.name = 'RegistryError';
    this.status = status;
    this.errorCode = errorCode;
  }
}

export interface RegistryClientOptions {
  /** base URL, e.g. http://127.0.0.1:8081; `https://key:secret@host` sends Basic credentials */
  url: string;
  timeoutMs?: number;
  /** attempts for network errors and 5xx answers (4xx are final) */
  retries?: number;
}

export interface RegisteredVersion {
  subject: string;
  id: number;
  version: number;
  schema: string;
}

export interface RegistryClient {
  url: string;
  register(subject: string, schema: string): Promise<number>;
  lookup(subject: string, schema: string): Promise<RegisteredVersion>;
  getSchemaById(id: number): Promise<string>;
  getVersion(subject: string, version: number | 'latest'): Promise<RegisteredVersion>;
  getCompatibility(subject?: string): Promise<string>;
  setCompatibility(level: string, subject?: string): Promise<void>;
}

/**
 * Split credentials out of a registry URL (`https://key:secret@host`, as Confluent Cloud hands them out):
 * fetch refuses URLs with credentials, so they travel as an `Authorization: Basic` header instead.
 */
export function registryEndpoint(url: string): { base: string; authorization?: string } {
  const u = new URL(url);
  let authorization: string | undefined;
  if (u.username || u.password) {
    const user = decodeURIComponent(u.username);
    const pass = decodeURIComponent(u.password);
    authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    u.username = '';
    u.password = '';
  }
  return { base: u.toString().replace(/\/+$/, ''), authorization };
}

export function createRegistryClient(opts: RegistryClientOptions): RegistryClient {
  const { base, authorization } = registryEndpoint(opts.url);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const retries = opts.retries ?? 4;

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let lastError: Error | undefined;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 2_000)));
      let res: Response;
      try {
        res = await fetch(`${base}${path}`, {
          method,
          headers: {
            accept: CONTENT_TYPE,
            ...(body !== undefined ? { 'content-type': CONTENT_TYPE } : {}),
            ...(authorization ? { authorization } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : undefined,
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (err) {
        lastError = new RegistryError(0, 0, `schema registry ${method} ${path} failed: ${(err as Error).message}`);
        continue;
      }
      const text = await res.text();
      let json: unknown;
      try {
        json = text === '' ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      if (res.ok) return json as T;
      const e = (json ?? {}) as { error_code?: number; message?: string };
      const err = new RegistryError(
        res.status,
        e.error_code ?? res.status,
        e.message ?? `${method} ${path}: HTTP ${res.status}`,
      );
      if (res.status < 500) throw err;
      lastError = err;
    }
    throw lastError ?? new RegistryError(0, 0, `schema registry ${method} ${path} failed`);
  }

  const enc = encodeURIComponent;
  return {
    /** the base URL without credentials */
    url: base,
    async register(subject, schema) {
      const r = await call<{ id: number }>('POST', `/subjects/${enc(subject)}/versions`, { schema });
      return r.id;
    },
    lookup(subject, schema) {
      return call<RegisteredVersion>('POST', `/subjects/${enc(subject)}`, { schema });
    },
    async getSchemaById(id) {
      const r = await call<{ schema: string; schemaType?: string }>('GET', `/schemas/ids/${id}`);
      if (r.schemaType && r.schemaType !== 'AVRO')
        throw new RegistryError(422, 42201, `schema ${id} is ${r.schemaType}, not AVRO`);
      return r.schema;
    },
    getVersion(subject, version) {
      return call<RegisteredVersion>('GET', `/subjects/${enc(subject)}/versions/${version}`);
    },
    async getCompatibility(subject) {
      const r = await call<{ compatibilityLevel: string }>(
        'GET',
        subject ? `/config/${enc(subject)}?defaultToGlobal=true` : '/config',
      );
      return r.compatibilityLevel;
    },
    async setCompatibility(level, subject) {
      await call('PUT', subject ? `/config/${enc(subject)}` : '/config', { compatibility: level });
    },
  };
}
