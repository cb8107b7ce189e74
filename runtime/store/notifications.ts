// Notifications: "topic T has new tasks", "a timer was created", "instance X, generation G
// has frames up to seq N". The hot statements (a transition, a fetch's frames) do not call
// pg_notify themselves: PostgreSQL serializes the commits of notifying transactions (one
// cluster-wide lock is held from the notify queue insert through the commit's WAL flush),
// and with several workers that queue costs about a fifth of the throughput
// (docs/PERFORMANCE.md, "Notifications after the commit"). Those statements answer what they
// would notify, and:
//
// - this process's listeners (long polls, the timer scheduler, progress followers) are
//   told at once, after the commit, in-process;
// - a relay sends the notifications to the other nodes in a statement of its own, one per
//   turn of the event loop however many commits notified, several notifications per NOTIFY
//   payload, with synchronous_commit off: it writes no data, so its commit need not
//   wait for a WAL flush while holding that lock.
//
// A process that dies between a commit and its relay loses those notifications for the
// other nodes. Every listener re-checks on its own (long polls and the timer scheduler
// every SAFETY_RECHECK_MS, progress followers every second, engine/fetch.ts,
// stream/frame-hub.ts), so a lost notification costs latency, never work.
//
// The relay sends only while another process listens: every Baton LISTEN connection
// names itself (announceListener), and the relay looks at pg_stat_activity at most
// once a second. A lone node relays nothing; a node that starts listening may miss
// the notifications of that second, which its re-checks make up for.
//
// A relayed payload is a space and then JSON {from, bells}: a space cannot begin the
// payload of a statement that still notifies itself (a topic is trimmed, a frames
// notification begins with a uuid, a timers one is empty). `from` tells a listener that
// the payload came from its own process, which heard the notifications already.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { fault } from '../shared/faults.ts';
import { afterCommit, isPool, poolOf, type Queryable } from './db.ts';

/** NOTIFY channels; each payload is one notification, or a relayed batch of them (readNotifications). */
export const TASKS_CHANNEL = 'baton_tasks';
export const TIMERS_CHANNEL = 'baton_timers';
export const FRAMES_CHANNEL = 'baton_frames';

export interface FrameNotice {
  instanceId: string;
  generation: number;
  seq: number;
}

/** What one committed statement notifies. */
export interface Notifications {
  /** topics that got ready tasks */
  topics?: readonly string[];
  /**
   * How many ready tasks each of `topics` got, in the same order, where the statement
   * knows; without it a listener wakes every poll of the topics (a relayed notification, the
   * rows a fetch locked and did not take). In-process only: the relay sends the topics.
   */
  counts?: readonly number[];
  /** a timer was created */
  timers?: boolean;
  frames?: readonly FrameNotice[];
}

/** Told about the notifications of this process's commits, after each commit. */
export interface NotificationListener {
  tasks?(topics: readonly string[], counts?: readonly number[]): void;
  timers?(): void;
  frames?(bells: readonly FrameNotice[]): void;
}

/** The task notifications of new ready tasks, given each one's topic: the topics and how many each got. */
export function readyTaskNotices(topicOfEach: readonly string[]): Pick<Notifications, 'topics' | 'counts'> {
  const perTopic = new Map<string, number>();
  for (const t of topicOfEach) perTopic.set(t, (perTopic.get(t) ?? 0) + 1);
  return { topics: [...perTopic.keys()], counts: [...perTopic.values()] };
}

/** Marks the payloads this process relays (a listener skips them: it heard them in-process). */
export const PROCESS_TAG: string = randomUUID();

/** How long the relay trusts what it saw of the other listeners. */
const LISTENERS_SEEN_FOR_MS = 1000;
const LISTENER_PREFIX = 'baton-listen ';

/** PostgreSQL refuses a payload of 8000 bytes or more; JSON escapes make some room for error. */
const PAYLOAD_BUDGET = 7000;

const listeners = new Set<NotificationListener>();

/** Subscribes to this process's notifications; answers an unsubscribe. */
export function onNotifications(listener: NotificationListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Sends the notifications once db's transaction has committed (at once for a statement sent
 * through the pool: it was its own transaction): here in-process, elsewhere through the relay.
 */
export function notifyAfterCommit(db: Queryable, bells: Notifications): void {
  if (!bells.topics?.length && !bells.timers && !bells.frames?.length) return;
  afterCommit(db, () => {
    for (const l of listeners) {
      try {
        if (bells.topics?.length) l.tasks?.(bells.topics, bells.counts);
        if (bells.timers) l.timers?.();
        if (bells.frames?.length) l.frames?.(bells.frames);
      } catch {
        // a listener's failure is its own: the others and the relay still hear
      }
    }
    relayOf(db).add(bells);
  });
}

/** Resolves once every notification given through the pool so far was sent (or given up); before pool.end(), and for tests. */
export function flushNotifications(pool: pg.Pool): Promise<void> {
  return relays.get(pool)?.flush() ?? Promise.resolve();
}

/** How many relay statements failed in this process (their notifications were dropped; the re-checks cover them). */
export function relayFailures(): number {
  return failures;
}

/**
 * The notifications of one NOTIFY payload: a relayed batch (`fromHere` when this process sent
 * it) or the single notification of a statement that notified itself.
 */
export function readNotifications(payload: string | undefined): { fromHere: boolean; bells: string[] } {
  if (!payload?.startsWith(' ')) return { fromHere: false, bells: [payload ?? ''] };
  try {
    const parsed = JSON.parse(payload.slice(1)) as { from?: unknown; bells?: unknown };
    const bells = Array.isArray(parsed.bells) ? parsed.bells.filter((b): b is string => typeof b === 'string') : [];
    return { fromHere: parsed.from === PROCESS_TAG, bells };
  } catch {
    return { fromHere: false, bells: [] };
  }
}

/**
 * Names a LISTEN connection so that the relays of other processes see it (application_name,
 * set by SQL: it wins over one given in the connection string). `tag`: the process it
 * hears for; its own process's relays do not send to it.
 */
export async function announceListener(client: Queryable, tag = PROCESS_TAG): Promise<void> {
  await client.query({ text: "select set_config('application_name', $1, false)", values: [LISTENER_PREFIX + tag] });
}

/** The text of a frames notification. */
export function frameNoticeText(b: FrameNotice): string {
  return `${b.instanceId} ${b.generation} ${b.seq}`;
}

/** The relay's prepared statements: the NOTIFYs, and the look for other listeners. */
export const RELAY_STATEMENT = 'relay_notifications';
export const LISTENERS_STATEMENT = 'other_listeners';

/** Whether a LISTEN connection of another process is open on this database (read-only: no transaction id). */
const OTHER_LISTENERS_SQL = `select exists (select 1 from pg_stat_activity
                                             where datname = current_database() and starts_with(application_name, $1)
                                               and application_name <> $2) as listening`;

/** One statement, its own transaction; async commit: no data is written, and a lost notification only costs a re-check. */
const RELAY_SQL = `select set_config('synchronous_commit', 'off', true) as async_commit, count(pg_notify(x.channel, x.payload)) as sent
                     from unnest($1::text[], $2::text[]) as x(channel, payload)`;

let failures = 0;

interface Sender {
  query: Queryable['query'];
}

/** Gathers the notifications given through one pool and sends them in one statement per turn. */
class Relay {
  private topics = new Set<string>();
  private timers = false;
  /** highest seq per "instance generation": a later notification of a generation covers an earlier one */
  private frames = new Map<string, FrameNotice>();
  private sending: Promise<void> | undefined;
  /** whether another process listened when last looked (performance.now() of that look) */
  private othersListen = true;
  private lookedAt = -Infinity;

  constructor(
    private readonly sender: Sender,
    /** a client in a transaction nobody commits for us: send at once, with the caller's commit */
    private readonly direct = false,
  ) {}

  add(bells: Notifications): void {
    for (const t of bells.topics ?? []) this.topics.add(t);
    if (bells.timers) this.timers = true;
    for (const f of bells.frames ?? []) {
      const key = `${f.instanceId} ${f.generation}`;
      if ((this.frames.get(key)?.seq ?? -1) < f.seq) this.frames.set(key, f);
    }
    if (this.direct) {
      void this.sendPending();
      return;
    }
    this.sending ??= this.relay();
  }

  flush(): Promise<void> {
    return this.sending ?? Promise.resolve();
  }

  private async relay(): Promise<void> {
    try {
      // Commits answering in this turn of the event loop share the statement.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.topics.size > 0 || this.timers || this.frames.size > 0) {
        if (!(await this.anyoneElseListens())) {
          this.takePending();
          continue;
        }
        await fault('notifications:before-relay');
        await this.sendPending();
      }
    } finally {
      this.sending = undefined;
    }
  }

  private async anyoneElseListens(): Promise<boolean> {
    if (performance.now() - this.lookedAt < LISTENERS_SEEN_FOR_MS) return this.othersListen;
    try {
      const { rows } = await this.sender.query<{ listening: boolean }>({
        name: LISTENERS_STATEMENT,
        text: OTHER_LISTENERS_SQL,
        values: [LISTENER_PREFIX, LISTENER_PREFIX + PROCESS_TAG],
      });
      this.othersListen = rows[0]?.listening !== false;
      this.lookedAt = performance.now();
    } catch {
      this.othersListen = true; // not known: send (and look again next time)
    }
    return this.othersListen;
  }

  private takePending(): { topics: string[]; timers: boolean; frames: FrameNotice[] } {
    const taken = { topics: [...this.topics], timers: this.timers, frames: [...this.frames.values()] };
    this.topics = new Set();
    this.timers = false;
    this.frames = new Map();
    return taken;
  }

  private async sendPending(): Promise<void> {
    const channels: string[] = [];
    const payloads: string[] = [];
    const pack = (channel: string, bells: string[]) => {
      let batch: string[] = [];
      let size = 0;
      const emit = () => {
        channels.push(channel);
        payloads.push(' ' + JSON.stringify({ from: PROCESS_TAG, bells: batch }));
        batch = [];
        size = 0;
      };
      for (const bell of bells) {
        const cost = JSON.stringify(bell).length + 1;
        if (cost > PAYLOAD_BUDGET) continue; // no payload can carry it; its listeners' re-check will find the work
        if (size + cost > PAYLOAD_BUDGET) emit();
        batch.push(bell);
        size += cost;
      }
      if (batch.length > 0) emit();
    };
    const taken = this.takePending();
    pack(TASKS_CHANNEL, taken.topics);
    if (taken.timers) pack(TIMERS_CHANNEL, ['']);
    pack(FRAMES_CHANNEL, taken.frames.map(frameNoticeText));
    if (channels.length === 0) return;
    try {
      await this.sender.query(
        this.direct
          ? { text: DIRECT_SQL, values: [channels, payloads] }
          : { name: RELAY_STATEMENT, text: RELAY_SQL, values: [channels, payloads] },
      );
    } catch {
      failures++;
    }
  }
}

/** For a client whose commit this process cannot see: pg_notify in its transaction, which PostgreSQL delivers at its commit. */
const DIRECT_SQL = `select count(pg_notify(x.channel, x.payload)) as sent from unnest($1::text[], $2::text[]) as x(channel, payload)`;

const relays = new WeakMap<object, Relay>();

function relayOf(db: Queryable): Relay {
  const pool = isPool(db) ? (db as pg.Pool) : poolOf(db);
  if (!pool) return new Relay(db, true);
  let relay = relays.get(pool);
  if (!relay) relays.set(pool, (relay = new Relay(pool)));
  return relay;
}
