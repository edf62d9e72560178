// The processors' time slices (streams/runtime/util.ts timeSlicer): no break until a slice of synchronous
// work has passed, then one turn of the event loop in which I/O and timers queued meanwhile run (in the
// app: the read API's requests), then a fresh slice.
import { describe, expect, it } from 'vitest';
import { timeSlicer } from '../../streams/runtime/util.ts';

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('timeSlicer', () => {
  it('breaks only after a slice of work, and lets callbacks queued meanwhile run before it resumes', async () => {
    const slice = timeSlicer(20);
    expect(slice()).toBeUndefined();
    let ran = false;
    setImmediate(() => {
      ran = true;
    });
    busy(25);
    const pause = slice();
    expect(pause).toBeInstanceOf(Promise);
    expect(ran).toBe(false);
    await pause;
    expect(ran).toBe(true);
    // a new slice starts after the break
    expect(slice()).toBeUndefined();
  });

  it('lets a loop of synchronous work share the event loop with a timer', async () => {
    const slice = timeSlicer(2);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      // 60 ms of work in 0.5 ms steps: without breaks the interval could not fire until the end
      let ticksDuringWork = 0;
      for (let i = 0; i < 120; i++) {
        const pause = slice();
        if (pause) {
          await pause;
          ticksDuringWork = ticks;
        }
        busy(0.5);
      }
      expect(ticksDuringWork).toBeGreaterThan(0);
    } finally {
      clearInterval(timer);
    }
  });
});
