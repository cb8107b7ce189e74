// The parked-poll registry: wakes parked long polls when a topic gets work. A notification
// only wakes: a woken poll fetches again, and a periodic re-check covers anything a
// notification cannot announce (a retry backoff running out, a lost connection, a node that
// died between its commit and its relay, store/notifications.ts). A statement committed by
// this process wakes its polls at once, in-process (after-commit notifications); the relayed
// payloads of this process are skipped when they come back. What SQL notifies itself (the
// flow-limit release trigger, migration 0009) comes back over the LISTEN connection a round
// trip and an event-loop turn later.
//
// A native poll parks with an offer (poll delivery, engine/poll-delivery.ts): a start or a
// single complete of this process may claim it while it is parked and unrung, insert its new
// task already locked for it in its own statement, and deliver the row. While claimed,
// nothing ends the park (a notification, the wait running out, the caller leaving, stop): the
// claim's outcome is waited for, so a task locked for the poll is always seen by it (and given
// back by pollForTasks if the caller has left).
import pg from 'pg';
import type { Logger } from 'pino';
import { announceListener, onNotifications, readNotifications, TASKS_CHANNEL, TIMERS_CHANNEL } from '../store/notifications.ts';
import type { LockedTaskRow } from '../store/tasks.ts';

/** What a parked native poll accepts in place of a fetch: its worker and lock duration per topic. */
export interface PollOffer {
  workerId: string;
  lockDurationMs: ReadonlyMap<string, number>;
}

/**
 * A parked poll reserved for one new task. Exactly one of deliver or release is called:
 * deliver once the creating statement committed the task locked for the poll, release
 * when it wrote nothing (the poll goes back to parked, or wakes if it was rung meanwhile).
 */
export interface PollClaim {
  workerId: string;
  lockDurationMs: number;
  deliver(task: LockedTaskRow): void;
  release(): void;
}

export interface PollClaims {
  /** a parked, unrung, open native poll waiting for the topic, reserved for one task; undefined if none */
  claimPoll(topic: string): PollClaim | undefined;
}

export interface TopicSubscription {
  /** resolves when one of the topics was notified since subscribing, or after ms, or on abort, or when a task was delivered */
  wait(ms: number, signal?: AbortSignal): Promise<void>;
  /** what a start or a complete delivered to this poll while it waited (engine/poll-delivery.ts); emptied by the call */
  takeHanded(): LockedTaskRow[];
  /** lets starts and completes of this process deliver a task to the poll while it is parked; undefined withdraws it */
  offer(offer: PollOffer | undefined): void;
  /** the poll fetches now: the tasks it was woken for are this fetch's to take */
  fetching(): void;
  /** the poll is done; if it was woken for tasks and leaves without fetching, the other parked polls of its topics wake for them */
  close(): void;
}

interface Waiter {
  topics: Set<string>;
  /** how many of any ready tasks of its topics its fetch takes at most; 0: unknown (it may pass some by) */
  capacity: number;
  rung: boolean;
  /** woken for a count of tasks (ring) and not fetched since */
  counted: boolean;
  /** ends the park, or with a claim pending marks it due */
  wake?: () => void;
  /** ends the park at once */
  finish?: () => void;
  signal?: AbortSignal;
  offer?: PollOffer;
  claimed: boolean;
  /** the park should have ended (ring, time, abort, stop) while claimed */
  due: boolean;
  handed: LockedTaskRow[];
}

export class ParkedPolls implements PollClaims {
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
    this.unsubscribeLocal ??= onNotifications({
      tasks: (topics, counts) => topics.forEach((topic, i) => this.ring(topic, counts?.[i])),
      timers: () => this.timerListeners.forEach((fn) => fn()),
    });
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (msg) => {
      const { fromHere, bells } = readNotifications(msg.payload);
      if (fromHere) return;
      if (msg.channel === TIMERS_CHANNEL) this.timerListeners.forEach((fn) => fn());
      else bells.forEach((topic) => this.ring(topic));
    });
    client.on('error', (err) => this.reconnect(err));
    client.on('end', () => this.reconnect());
    await client.connect();
    await announceListener(client);
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

  /**
   * Subscribe before fetching, so a notification that lands during the fetch is not missed.
   * `capacity`: the most tasks one fetch of the poll takes, when it takes any ready task of
   * its topics (its maxTasks); 0 when it may pass some by (a Camunda poll's filters): such a
   * poll wakes for every notification of its topics.
   */
  subscribe(topics: string[], capacity = 0): TopicSubscription {
    const waiter: Waiter = {
      topics: new Set(topics),
      capacity,
      rung: false,
      counted: false,
      claimed: false,
      due: false,
      handed: [],
    };
    this.waiters.add(waiter);
    return {
      wait: (ms, signal) => this.park(waiter, ms, signal),
      takeHanded: () => waiter.handed.splice(0),
      offer: (offer) => {
        if (offer) waiter.offer = offer;
        else delete waiter.offer;
      },
      fetching: () => {
        waiter.counted = false;
      },
      close: () => {
        this.waiters.delete(waiter);
        waiter.wake?.();
        if (waiter.counted) for (const topic of waiter.topics) this.ring(topic);
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

  /**
   * Reserves a parked, unrung native poll of the topic for one new task (PollClaims). A rung
   * poll is left alone: it is about to fetch, and may find an older task first.
   */
  claimPoll(topic: string): PollClaim | undefined {
    if (this.stoppedFlag) return undefined;
    for (const w of this.waiters) {
      const lockDurationMs = w.offer?.lockDurationMs.get(topic);
      if (!w.offer || lockDurationMs === undefined || !w.finish || w.claimed || w.rung || w.signal?.aborted) continue;
      w.claimed = true;
      let settled = false;
      return {
        workerId: w.offer.workerId,
        lockDurationMs,
        deliver: (task) => {
          if (settled) return;
          settled = true;
          w.claimed = false;
          w.handed.push(task);
          w.finish?.();
        },
        release: () => {
          if (settled) return;
          settled = true;
          w.claimed = false;
          if (w.due || w.rung) w.finish?.();
        },
      };
    }
    return undefined;
  }

  private park(waiter: Waiter, ms: number, signal?: AbortSignal): Promise<void> {
    if (waiter.rung || this.stoppedFlag || signal?.aborted) {
      waiter.rung = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', end);
        waiter.wake = undefined;
        waiter.finish = undefined;
        waiter.signal = undefined;
        waiter.rung = false;
        waiter.due = false;
        resolve();
      };
      const end = () => {
        if (waiter.claimed) waiter.due = true;
        else finish();
      };
      const timer = setTimeout(end, ms);
      signal?.addEventListener('abort', end, { once: true });
      waiter.wake = end;
      waiter.finish = finish;
      if (signal) waiter.signal = signal;
    });
  }

  /**
   * Wakes the polls of the topic. With `count` (how many ready tasks it got, when the
   * committing statement knows) only that many parked polls wake, oldest first, counted by
   * how many tasks each fetch takes: waking every parked poll for one task cost a fetch
   * statement per poll, all but one of them finding nothing. A poll that is not parked (its
   * fetch in flight, or claimed for a delivery) is marked rung whatever the count: its
   * fetch may have begun before the commit, so it fetches again instead of parking, and it
   * does not count toward the tasks, since it may leave with others. A woken poll that
   * finds the tasks taken parks again; one that leaves without fetching (its caller gone)
   * wakes every parked poll of its topics when it closes; a poll of several topics that
   * locks more rows than it takes frees them with a notification of its own (fetch-and-lock).
   * What no woken poll takes waits for the next fetch, and at most for the parked polls'
   * re-check (SAFETY_RECHECK_MS).
   */
  private ring(topic: string | undefined, count?: number): void {
    let uncovered = count ?? Infinity;
    for (const w of this.waiters) {
      if (topic !== undefined && !w.topics.has(topic)) continue;
      const parked = w.wake !== undefined && !w.claimed && !w.signal?.aborted;
      if (parked && uncovered <= 0 && w.capacity > 0) continue;
      w.rung = true;
      w.wake?.();
      if (parked && count !== undefined) {
        w.counted = true;
        uncovered -= w.capacity;
      }
    }
  }

  private reconnect(err?: Error): void {
    if (this.stoppedFlag || this.reconnectTimer) return;
    this.log.warn({ err: err?.message }, 'parkedPolls:disconnected');
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
