/**
 * Test tooling, loaded with `node --import` into a manager under test: shifts the process's wall
 * clock (Date and Date.now) without touching the machine's. TOPOVOL_TEST_CLOCK_SKEW_MS is a constant
 * offset (a node whose clock is wrong); TOPOVOL_TEST_CLOCK_STEP="afterMs:stepMs" steps the clock by
 * stepMs once afterMs have passed (NTP stepping a clock, a VM resumed after a pause). Monotonic
 * clocks (performance.now, timers) are left alone, as on a real machine.
 */
const RealDate = Date;
const started = RealDate.now();
const skewMs = Number(process.env.TOPOVOL_TEST_CLOCK_SKEW_MS ?? 0);
const [stepAfterMs, stepMs] = (process.env.TOPOVOL_TEST_CLOCK_STEP ?? '').split(':').map(Number);

function offsetMs(): number {
  const stepped = stepAfterMs !== undefined && stepMs !== undefined && !Number.isNaN(stepMs) && RealDate.now() - started >= stepAfterMs;
  return skewMs + (stepped ? stepMs : 0);
}

const now = (): number => RealDate.now() + offsetMs();

globalThis.Date = new Proxy(RealDate, {
  construct: (target, args: unknown[], newTarget: NewableFunction) => Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget) as object,
  // Date() called as a function returns the current time as a string.
  apply: () => new RealDate(now()).toString(),
  get: (target, prop, receiver: unknown): unknown => (prop === 'now' ? now : Reflect.get(target, prop, receiver)),
});
