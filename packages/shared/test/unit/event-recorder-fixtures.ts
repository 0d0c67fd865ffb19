import type { EventRecorder } from '../../src/events/event-recorder.js';
import type { FakeClock } from '../../src/ratelimit/clock.js';

/** Flushes while driving the fake clock through the recorder's waits (its retries and spam budget). */
export async function flushDriving(r: EventRecorder, clock: FakeClock): Promise<void> {
  let done = false;
  const f = r.flush().then(() => {
    done = true;
  });
  while (!done) {
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(1_000);
  }
  await f;
}
