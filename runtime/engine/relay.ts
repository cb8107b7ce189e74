// A relay works off rows that transactions leave for another transaction to act on (call returns,
// thrown signals): each delivery is a transaction of its own that takes one row (SKIP LOCKED, so
// any number of nodes share the work). It runs when this process's commits announce new rows, and
// every `intervalMs` for rows another node left behind (a crash between a commit and its delivery).
import type { Logger } from 'pino';

export interface Relay {
  /** deliver what is waiting now */
  poke(): void;
  stop(): Promise<void>;
}

export interface RelaySpec {
  /** for the log: `<name>:delivery_failed`, `<name>:check_failed` */
  name: string;
  /** delivers one row; answers false when none was left to take */
  deliverOne: () => Promise<boolean>;
  /** whether any row waits, without a transaction */
  anyWaiting: () => Promise<boolean>;
  /** calls the function after this process commits a new row; answers the unsubscribe */
  subscribe: (fn: () => void) => () => void;
  intervalMs: number;
  /** deliveries at once while a backlog lasts */
  lanes: number;
}

export function startRelay(log: Logger, spec: RelaySpec): Relay {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  // Lanes grow while there is work: a lane that delivered one starts another (up to `lanes`), so an
  // idle poke costs one empty take, and a backlog is worked by several transactions at once.
  let lanes = 0;
  const lanesDone: Promise<void>[] = [];
  const lane = async (): Promise<void> => {
    lanes++;
    try {
      while (!stopped && (await spec.deliverOne())) {
        if (lanes < spec.lanes) lanesDone.push(lane());
      }
    } catch (err) {
      log.error({ err }, `${spec.name}:delivery_failed`);
    } finally {
      lanes--;
    }
  };
  const drain = async (): Promise<void> => {
    do {
      again = false;
      lanesDone.length = 0;
      lanesDone.push(lane());
      while (lanesDone.length > 0) await lanesDone.shift();
    } while (again && !stopped);
  };
  const poke = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = drain().finally(() => {
      running = undefined;
    });
  };
  const unsubscribe = spec.subscribe(poke);
  // The re-check looks before it opens a transaction: an idle node sends one statement a tick.
  const recheck = (): void => {
    if (stopped || running) return;
    spec.anyWaiting().then(
      (waiting) => waiting && poke(),
      (err: Error) => log.warn({ err: err.message }, `${spec.name}:check_failed`),
    );
  };
  const timer = setInterval(recheck, spec.intervalMs);
  timer.unref();
  poke();
  return {
    poke,
    async stop() {
      stopped = true;
      unsubscribe();
      clearInterval(timer);
      await running;
    },
  };
}
