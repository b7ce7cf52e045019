// A preload (`node --import`) that sets this process's clock TEST_CLOCK_SKEW_MS off (positive: ahead), as a
// host whose time is not synchronized would be: `Date.now()` and `new Date()` move; the monotonic clock
// (performance.now) does not, as on a real host. startServiceProcess adds it when asked for a skew.
const skew = Number(process.env.TEST_CLOCK_SKEW_MS ?? 0);

if (skew !== 0) {
  const RealDate = Date;
  const now = () => RealDate.now() + skew;
  class SkewedDate extends RealDate {
    constructor(...args: ConstructorParameters<typeof Date> | []) {
      if (args.length === 0) super(now());
      else super(...(args as ConstructorParameters<typeof Date>));
    }

    static override now(): number {
      return now();
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
}
