/**
 * At most `slots` driver calls at once; the rest wait in order. The capacity loop starts its
 * GetCapacity calls here instead of awaiting them on a worker, so a driver that hangs (each call
 * up to --capacity-timeout × --capacity-getcapacity-attempts) ties up slots, never the workers that
 * handle node and class changes and delete obsolete objects.
 */
export class CallSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly slots: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.slots) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await fn();
    } finally {
      // Hand the slot straight to the next waiter (running stays the same), or free it.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
