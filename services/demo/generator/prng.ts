// A small seeded pseudo-random generator for the demo store: the same seed always gives the same store,
// sessions and ground truth (tests and benchmarks rely on that), so nothing in services/demo/generator may call
// Math.random. sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, 128-bit state, passes
// PractRand) seeded through cyrb128 from a string; `fork(label)` derives an independent stream, so a
// part of the store (one session, one product) can be generated alone, lazily, in any order.

/** cyrb128: a fast 128-bit string hash (four 32-bit words), used only to seed the generator. */
export function cyrb128(str: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < str.length; i++) {
    const k = str.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  readonly seed: string;

  constructor(seed: string | number) {
    this.seed = String(seed);
    [this.a, this.b, this.c, this.d] = cyrb128(this.seed);
    // discard the first outputs (the state is weakly mixed right after seeding)
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  /** An independent stream for a named part (e.g. `session:42`): same seed + label → same stream. */
  fork(label: string | number): Rng {
    return new Rng(`${this.seed}/${label}`);
  }

  nextUint32(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    let t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    t = (t + this.d) | 0;
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** uniform in [0, 1) */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** integer in [lo, hi] (inclusive) */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)];
  }

  /** pick by weight (weights need not sum to 1) */
  weighted<T>(items: readonly T[], weights: readonly number[]): T {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.next() * total;
    for (let i = 0; i < items.length; i++) {
      r -= weights[i];
      if (r < 0) return items[i];
    }
    return items[items.length - 1];
  }

  /** `k` distinct items, in random order */
  sample<T>(items: readonly T[], k: number): T[] {
    const n = Math.min(k, items.length);
    if (n * 4 < items.length) {
      const seen = new Set<number>();
      const out: T[] = [];
      while (out.length < n) {
        const i = Math.floor(this.next() * items.length);
        if (!seen.has(i)) {
          seen.add(i);
          out.push(items[i]);
        }
      }
      return out;
    }
    return this.shuffle([...items]).slice(0, n);
  }

  /** Fisher–Yates, in place */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  /** Zipf-like rank in [0, n): rank r has weight 1 / (r + 1)^s (inverse-CDF on the continuous approximation) */
  zipf(n: number, s = 1.1): number {
    if (n <= 1) return 0;
    const u = this.next();
    // continuous approximation of the harmonic CDF for s != 1
    const a = 1 - s;
    const max = ((n + 1) ** a - 1) / a;
    const x = (u * max * a + 1) ** (1 / a) - 1;
    return Math.min(n - 1, Math.max(0, Math.floor(x)));
  }

  /** exponential with the given mean */
  exp(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  /** a version-4-shaped UUID from this stream (deterministic; used as event ids so a replay deduplicates) */
  uuid(): string {
    const h = (n: number) => n.toString(16).padStart(8, '0');
    const w = [this.nextUint32(), this.nextUint32(), this.nextUint32(), this.nextUint32()];
    const s = h(w[0]) + h(w[1]) + h(w[2]) + h(w[3]);
    const variant = ((Number.parseInt(s[16], 16) & 0x3) | 0x8).toString(16);
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-4${s.slice(13, 16)}-${variant}${s.slice(17, 20)}-${s.slice(20, 32)}`;
  }
}
