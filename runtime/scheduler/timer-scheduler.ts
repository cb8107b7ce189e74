// Fires due timers. It sleeps until the next due time, or until a notification
// says a timer was created (it may be nearer), never on a fixed short poll.
// Any number of schedulers may run: each firing is one guarded transition.
import type { Logger } from 'pino';
import type { Engine } from '../engine/context.ts';
import { fireDueTimers } from '../engine/waits.ts';
import { msUntilNextTimer } from '../store/waits.ts';

export interface TimerScheduler {
  /** fire what is due now; answers how many fired */
  tick(): Promise<number>;
  /** a timer was created somewhere: recompute the next wake-up */
  poke(): void;
  stop(): Promise<void>;
}

export interface TimerSchedulerOptions {
  /** longest sleep without a notification (covers lost notifications) */
  maxSleepMs: number;
  batchSize: number;
}

export function startTimerScheduler(engine: Engine, log: Logger, opts: TimerSchedulerOptions): TimerScheduler {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;

  const tick = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const fired = await fireDueTimers(engine, opts.batchSize);
      total += fired;
      if (fired < opts.batchSize) return total;
    }
  };

  const schedule = (ms: number) => {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(run, Math.max(0, Math.min(ms, opts.maxSleepMs)));
  };

  function run(): void {
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      try {
        const fired = await tick();
        if (fired > 0) log.debug({ count: fired }, 'timer:fired');
        schedule((await msUntilNextTimer(engine.pool)) ?? opts.maxSleepMs);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'timers:failed');
        schedule(1000);
      }
    })().finally(() => {
      running = undefined;
      if (again && !stopped) {
        again = false;
        run();
      }
    });
  }

  schedule(0);
  return {
    tick,
    poke: () => run(),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
