// Fires due timers. It sleeps until the next due time (a setTimeout to it, measured
// on the database clock), never on a fixed short poll, and at that wake-up fires
// first and asks for the next due time after. A notification that a timer was
// created only asks for that wake-up to be recomputed, and a burst of them asks
// once. Any number of schedulers may run: each firing is guarded (engine/waits.ts).
import type { Logger } from 'pino';
import type { Engine } from '../engine/context.ts';
import { fireDueTimers } from '../engine/waits.ts';
import { msUntilNextTimer } from '../store/waits.ts';

export interface TimerScheduler {
  /** fire what is due now; answers how many fired */
  tick(): Promise<number>;
  /** a timer was created somewhere: recompute the next wake-up (coalesced) */
  poke(): void;
  stop(): Promise<void>;
}

export interface TimerSchedulerOptions {
  /** longest sleep without a notification (covers lost notifications) */
  maxSleepMs: number;
  /** most due timers one round takes in hand (split over the firing lanes at once) */
  batchSize: number;
  /**
   * Pokes within this long of each other share one recomputation, so creating timers at
   * 300/s runs the firing queries at most 1000/this times a second, not 300.
   * A timer due the moment it is created fires up to this much later.
   */
  pokeCoalesceMs?: number;
}

/** Pause before looking again when due timers exist but none could be fired (another node holds them). */
const STUCK_RETRY_MS = 50;

export function startTimerScheduler(engine: Engine, log: Logger, opts: TimerSchedulerOptions): TimerScheduler {
  const coalesceMs = opts.pokeCoalesceMs ?? 10;
  let timer: NodeJS.Timeout | undefined;
  /** when the planned wake-up runs (performance.now() clock) */
  let wakeAt = Infinity;
  /** the planned wake-up is a timer's due time (not a recomputation) */
  let wakeForDue = false;
  let running: Promise<void> | undefined;
  let poked = false;
  let stopped = false;

  const tick = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const fired = await fireDueTimers(engine, opts.batchSize);
      total += fired;
      if (fired < opts.batchSize) return total;
    }
  };

  const schedule = (ms: number, forDue = false) => {
    clearTimeout(timer);
    if (stopped) return;
    wakeForDue = forDue && ms <= opts.maxSleepMs;
    const delay = Math.max(0, Math.min(ms, opts.maxSleepMs));
    wakeAt = performance.now() + delay;
    // Rounded up: a wake-up a fraction of a millisecond early finds nothing due and costs a round.
    timer = setTimeout(run, Math.ceil(delay));
  };

  function run(): void {
    if (running) {
      poked = true;
      return;
    }
    wakeAt = Infinity;
    const forDue = wakeForDue;
    wakeForDue = false;
    running = (async () => {
      try {
        let firedBefore = -1;
        // At a due time, asking when the next timer is due first would answer 0: one round
        // trip more before the first firing (the look-up of due timers answers that too).
        // None found (the wake-up ran a hair early) is not "stuck": the recomputation decides.
        if (forDue) {
          const fired = await tick();
          if (fired > 0) {
            firedBefore = fired;
            log.debug({ count: fired }, 'timer:fired');
          }
        }
        for (;;) {
          const ms = await msUntilNextTimer(engine.pool);
          if (ms === undefined || ms > 0) return schedule(ms ?? opts.maxSleepMs, ms !== undefined);
          if (firedBefore === 0) return schedule(STUCK_RETRY_MS);
          firedBefore = await tick();
          if (firedBefore > 0) log.debug({ count: firedBefore }, 'timer:fired');
        }
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'timers:failed');
        schedule(1000);
      }
    })().finally(() => {
      running = undefined;
      if (poked) {
        poked = false;
        poke();
      }
    });
  }

  function poke(): void {
    if (stopped) return;
    if (running) {
      poked = true;
      return;
    }
    // The planned wake-up recomputes anyway; otherwise one recomputation for this burst.
    if (wakeAt - performance.now() > coalesceMs) schedule(coalesceMs);
  }

  schedule(0);
  return {
    tick,
    poke,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
