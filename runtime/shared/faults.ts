// Named fault points for crash drills (test/chaos): BATON_FAULTS makes a process
// crash or stall at an exact window. Read once at start; off, a hook is one
// comparison and an early return.
//
//   BATON_FAULTS=name[:action][:modifier...][,name...]
//   actions:   crash (default; SIGKILL of this process), delay:<ms>, hang (never returns)
//   modifiers: once (at most once per process), chance:<0..1> (fires with that probability)
//   e.g. BATON_FAULTS=task:after-side-effect:crash:once,timer:before-fire:delay:300

/** Every window a fault can be injected at; an unknown name in BATON_FAULTS is refused at start. */
export const FaultPoint = {
  /** worker SDK: the handler returned (its side effect is done), complete not sent yet; the chaos worker's afterHandler hook */
  taskAfterSideEffect: 'task:after-side-effect',
  /** api: complete committed, HTTP answer not sent yet */
  apiAfterCompleteCommit: 'api:after-complete-commit',
  /** engine: fetch-and-lock committed its locks, the answer not sent yet */
  fetchAfterLock: 'fetch:after-lock',
  /** scheduler: a due timer was selected, not fired yet */
  timerBeforeFire: 'timer:before-fire',
  /** engine: a published message is stored (same transaction), not matched yet */
  messageBeforeMatch: 'message:before-match',
  /** engine: a compensation handler finished, the next one not committed yet */
  compensationMidSaga: 'compensation:mid-saga',
  /** store: a transition committed and its notifications rang in-process, not relayed to the other nodes yet */
  notificationsBeforeRelay: 'notifications:before-relay',
  /** engine: a called instance's return is taken for delivery, its parent's transition not committed yet */
  callBeforeReturn: 'call:before-return',
  /** engine: a called instance's escalation is taken for delivery, its parent's transition not committed yet */
  callBeforeEscalation: 'call:before-escalation',
  /** engine: a thrown signal is taken for delivery, its receivers' transitions not committed yet */
  signalBeforeDelivery: 'signal:before-delivery',
  /** engine: a batch's operation and result row for one instance committed, the chunk's cursor not moved yet */
  batchAfterInstance: 'batch:after-instance',
} as const;
export type FaultPoint = (typeof FaultPoint)[keyof typeof FaultPoint];

export type FaultAction = { kind: 'crash' } | { kind: 'delay'; ms: number } | { kind: 'hang' };

export interface FaultRule {
  point: FaultPoint;
  action: FaultAction;
  once: boolean;
  chance: number;
}

const KNOWN = new Set<string>(Object.values(FaultPoint));

/** Parses a BATON_FAULTS value; throws on anything it does not understand (a typo must not silently disable a drill). */
export function parseFaults(spec: string | undefined): ReadonlyMap<FaultPoint, FaultRule> {
  const rules = new Map<FaultPoint, FaultRule>();
  for (const entry of (spec ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const parts = entry.split(':');
    // Point names contain one colon; what follows them is the action and its modifiers.
    const point = parts.slice(0, 2).join(':');
    if (!KNOWN.has(point))
      throw new Error(`BATON_FAULTS: unknown fault point "${point}" in "${entry}"; known: ${[...KNOWN].join(', ')}`);
    const rule: FaultRule = { point: point as FaultPoint, action: { kind: 'crash' }, once: false, chance: 1 };
    const rest = parts.slice(2);
    for (let i = 0; i < rest.length; i++) {
      const word = rest[i];
      if (word === 'crash' || word === 'hang') rule.action = { kind: word };
      else if (word === 'once') rule.once = true;
      else if (word === 'delay' || word === 'chance') {
        const n = Number(rest[++i]);
        const ok = word === 'delay' ? Number.isInteger(n) && n >= 0 : n >= 0 && n <= 1;
        if (!ok)
          throw new Error(
            `BATON_FAULTS: "${word}" in "${entry}" needs ${word === 'delay' ? 'milliseconds' : 'a probability from 0 to 1'}`,
          );
        if (word === 'delay') rule.action = { kind: 'delay', ms: n };
        else rule.chance = n;
      } else throw new Error(`BATON_FAULTS: unknown action "${word ?? ''}" in "${entry}"`);
    }
    rules.set(rule.point, rule);
  }
  return rules;
}

const rules = parseFaults(process.env.BATON_FAULTS);
const fired = new Set<FaultPoint>();

/** The hook: does nothing unless BATON_FAULTS names this point. */
export function fault(point: FaultPoint): Promise<void> | undefined {
  if (rules.size === 0) return undefined;
  const rule = rules.get(point);
  if (!rule || (rule.once && fired.has(point)) || Math.random() >= rule.chance) return undefined;
  fired.add(point);
  // One line on stderr so a drill can tell which window the process died in.
  process.stderr.write(`baton-fault ${point} ${rule.action.kind}\n`);
  if (rule.action.kind === 'delay') {
    const ms = rule.action.ms;
    return new Promise<void>((resolve) => setTimeout(resolve, ms));
  }
  if (rule.action.kind === 'crash') process.kill(process.pid, 'SIGKILL');
  return new Promise<void>(() => {}); // hang (and the instant before SIGKILL lands)
}

/** For a hook after an awaited call on one line: `await faultAfter(point, call())`; `when` limits it to some results. */
export async function faultAfter<T>(point: FaultPoint, value: Promise<T>, when?: (result: T) => boolean): Promise<T> {
  const result = await value;
  if (rules.size > 0 && (!when || when(result))) await fault(point);
  return result;
}
