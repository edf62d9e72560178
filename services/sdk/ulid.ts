// ULIDs for event ids (Crockford base32: 48-bit millisecond time + 80 random bits), monotonic within one
// millisecond so ids made in a burst sort in creation order. Web Crypto only: runs in browsers and Node.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
let lastTime = -1;
let lastRandom: number[] = [];

function randomDigits(): number[] {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b & 31);
}

/** a new ULID; ids from one process/page are strictly increasing */
export function ulid(now = Date.now()): string {
  if (now <= lastTime) {
    // same millisecond (or a clock step back): the previous random part plus one
    now = lastTime;
    let i = 15;
    while (i >= 0 && lastRandom[i] === 31) lastRandom[i--] = 0;
    if (i >= 0) lastRandom[i]++;
  } else {
    lastTime = now;
    lastRandom = randomDigits();
  }
  let time = '';
  for (let i = 0, t = now; i < 10; i++, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time;
  return time + lastRandom.map((d) => ALPHABET[d]).join('');
}
