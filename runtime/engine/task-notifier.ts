// Wakes parked long polls when a topic gets work. Postgres NOTIFY only rings the
// doorbell: a woken poll fetches again, and a periodic re-check covers anything
// a notification cannot announce (a retry backoff running out, a lost connection).
// A transition committed by this process rings at once, in-process: the NOTIFY
// would come back over the LISTEN connection a round trip and an event-loop turn
// later. Its echo still rings (other paths notify too, and one cannot tell them
// apart safely); a poll that already took the task has gone by then, one still
// parked fetches once more.
import pg from 'pg';
import type { Logger } from 'pino';
import { TASKS_CHANNEL, TIMERS_CHANNEL, onTasksCommitted } from '../store/instances.ts';

export interface TopicSubscription {
  /** resolves when one of the topics was notified since subscribing, or after ms, or on abort */
  wait(ms: number, signal?: AbortSignal): Promise<void>;
  close(): void;
}

interface Waiter {
  topics: Set<string>;
  rung: boolean;
  wake?: () => void;
}

export class TaskNotifier {
  private client: pg.Client | undefined;
  private readonly waiters = new Set<Waiter>();
  private stoppedFlag = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly timerListeners: (() => void)[] = [];
  private unsubscribeLocal: (() => void) | undefined;

  constructor(
    private readonly connectionString: string,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.unsubscribeLocal ??= onTasksCommitted((topics) => topics.forEach((topic) => this.ring(topic)));
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (msg) => {
      if (msg.channel === TIMERS_CHANNEL) this.timerListeners.forEach((fn) => fn());
      else this.ring(msg.payload);
    });
    client.on('error', (err) => this.reconnect(err));
    client.on('end', () => this.reconnect());
    await client.connect();
    await client.query(`listen ${TASKS_CHANNEL}; listen ${TIMERS_CHANNEL}`);
    this.client = client;
  }

  async stop(): Promise<void> {
    this.stoppedFlag = true;
    this.unsubscribeLocal?.();
    clearTimeout(this.reconnectTimer);
    for (const w of this.waiters) w.wake?.();
    await this.client?.end().catch(() => undefined);
  }

  /** Subscribe before fetching, so a notification that lands during the fetch is not missed. */
  subscribe(topics: string[]): TopicSubscription {
    const waiter: Waiter = { topics: new Set(topics), rung: false };
    this.waiters.add(waiter);
    return {
      wait: (ms, signal) => this.park(waiter, ms, signal),
      close: () => {
        this.waiters.delete(waiter);
        waiter.wake?.();
      },
    };
  }

  /** called when a timer row is created anywhere (and after a reconnect) */
  onTimerCreated(listener: () => void): void {
    this.timerListeners.push(listener);
  }

  /** true once stop() ran: parked polls answer what they have */
  get stopped(): boolean {
    return this.stoppedFlag;
  }

  get parked(): number {
    return this.waiters.size;
  }

  private park(waiter: Waiter, ms: number, signal?: AbortSignal): Promise<void> {
    if (waiter.rung || this.stoppedFlag || signal?.aborted) {
      waiter.rung = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiter.wake = undefined;
        waiter.rung = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      waiter.wake = done;
    });
  }

  private ring(topic: string | undefined): void {
    for (const w of this.waiters) {
      if (topic !== undefined && !w.topics.has(topic)) continue;
      w.rung = true;
      w.wake?.();
    }
  }

  private reconnect(err?: Error): void {
    if (this.stoppedFlag || this.reconnectTimer) return;
    this.log.warn({ err: err?.message }, 'notifier:disconnected');
    const old = this.client;
    this.client = undefined;
    old?.removeAllListeners();
    old?.on('error', () => undefined);
    old?.end().catch(() => undefined);
    // Wake everyone: notifications may have been lost while disconnected.
    this.ring(undefined);
    this.timerListeners.forEach((fn) => fn());
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.start().catch((e: Error) => this.reconnect(e));
    }, 1000);
  }
}
