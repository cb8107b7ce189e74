// Runs a deployed definition with no knowledge of it: one generic worker completes every task of
// every topic the plans name, with no variables, and each instance is followed until it ends or
// waits where it must. The outcome says which, honestly: a message, a signal or a timer far off
// is a wait, an incident is an incident, never completion.
import type { TestDatabase } from './db.ts';
import type { ApiClient } from './server.ts';

export type Outcome =
  | { outcome: 'completed' }
  | { outcome: 'waiting-for-message' | 'waiting-for-signal' | 'waiting-for-timer'; at: string[] }
  | { outcome: 'incident'; kind: string; at: string; message: string }
  | { outcome: 'not-started'; reason: string }
  | { outcome: 'stuck'; status: string; active: string[] };

export interface PlanStepView {
  id: string;
  kind: string;
  scope?: string;
  task?: { topic: string };
  wait?: { trigger: string; name?: string };
  call?: { process: { key: string }; body?: unknown };
  /** a step of a parallel subprocess's body, a definition of its own: its start event does not start the process */
  inBody?: true;
}

export interface Deployed {
  key: string;
  version: number;
}

/**
 * The steps of a deployed version's plan (GET /api/definitions/:key/versions/:version), with the
 * steps of its parallel subprocesses' bodies (deployed with it, each its own definition).
 */
export async function planStepsOf(api: ApiClient, deployed: Deployed): Promise<PlanStepView[]> {
  const res = await api.get(`/api/definitions/${encodeURIComponent(deployed.key)}/versions/${deployed.version}`);
  if (res.status !== 200) throw new Error(`GET definition ${deployed.key} v${deployed.version} answered ${res.status}`);
  const steps = res.body.plan.steps as PlanStepView[];
  const bodies = [];
  for (const step of steps) {
    if (!step.call?.body) continue;
    const body = await api.get(`/api/definitions/${encodeURIComponent(step.call.process.key)}`);
    if (body.status !== 200) throw new Error(`GET body ${step.call.process.key} answered ${body.status}`);
    const inner = await planStepsOf(api, { key: body.body.key, version: body.body.version });
    bodies.push(...inner.map((s) => ({ ...s, inBody: true as const })));
  }
  return [...steps, ...bodies];
}

/** Topics of every external task of a plan (service, send, external script and business rule tasks, handlers). */
export function topicsOf(steps: PlanStepView[]): string[] {
  return [...new Set(steps.flatMap((s) => (s.task ? [s.task.topic] : [])))];
}

/** A worker that fetches every topic it is told about and completes each task with no variables, until stopped. */
export function startGenericWorker(api: ApiClient, workerId = 'corpus-worker') {
  const topics = new Set<string>();
  let stopped = false;
  let completed = 0;
  const loop = (async () => {
    while (!stopped) {
      const names = [...topics];
      let fetched = 0;
      for (let i = 0; i < names.length; i += 100) {
        const res = await api.post('/api/external-tasks/fetch-and-lock', {
          workerId,
          maxTasks: 50,
          topics: names.slice(i, i + 100).map((name) => ({ name, lockDurationMs: 30_000 })),
        });
        if (res.status !== 200) throw new Error(`fetch-and-lock answered ${res.status} ${JSON.stringify(res.body)}`);
        for (const task of res.body as { id: string; lockToken: string }[]) {
          const done = await api.post(`/api/external-tasks/${task.id}/complete`, { workerId, lockToken: task.lockToken });
          if (done.status === 204) completed++;
          fetched++;
        }
      }
      fetched += await completeUserTasks(api);
      if (fetched === 0) await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    serve(more: string[]) {
      for (const topic of more) topics.add(topic);
    },
    completed: () => completed,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/**
 * Every open user task is claimed by a person it allows (its assignee, a candidate user, or one in
 * its candidate groups) and completed with the least its form accepts. Answers how many it completed.
 */
async function completeUserTasks(api: ApiClient): Promise<number> {
  const open = await api.get('/api/user-tasks?limit=50');
  if (open.status !== 200) throw new Error(`user tasks answered ${open.status} ${JSON.stringify(open.body)}`);
  let completed = 0;
  for (const listed of open.body.items as {
    id: string;
    assignee: string | null;
    candidateUsers: string[];
    candidateGroups: string[];
  }[]) {
    const userId = listed.assignee ?? listed.candidateUsers[0] ?? 'corpus-person';
    if (!listed.assignee) {
      const claimed = await api.post(`/api/user-tasks/${listed.id}/claim`, { userId, groups: listed.candidateGroups });
      if (claimed.status !== 200) continue; // completed or canceled meanwhile
    }
    const task = await api.get(`/api/user-tasks/${listed.id}`);
    if (task.status !== 200) continue;
    const done = await api.post(`/api/user-tasks/${listed.id}/complete`, { userId, variables: leastFormInput(task.body.form) });
    if (done.status === 200) completed++;
  }
  return completed;
}

/** Values for the required fields of a user task's form, the smallest each accepts. */
function leastFormInput(form: { fields?: any[]; schema?: any } | undefined): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const f of form?.fields ?? []) {
    const rule = (name: string) => f.constraints.find((c: { name: string }) => c.name === name)?.config;
    if (!rule('required') && !f.constraints.some((c: { name: string }) => c.name === 'required')) continue;
    values[f.id] =
      f.type === 'boolean'
        ? true
        : f.type === 'long'
          ? Number(rule('min') ?? 0)
          : f.type === 'enum'
            ? f.values[0]?.id
            : f.type === 'date'
              ? '01/01/2026'
              : 'x'.repeat(Math.max(1, Number(rule('minlength') ?? 1)));
  }
  const walk = (components: any[] | undefined) => {
    for (const c of components ?? []) {
      if (typeof c.key === 'string' && c.validate?.required)
        values[c.key] =
          c.type === 'number'
            ? (c.validate.min ?? 0)
            : c.type === 'checkbox'
              ? true
              : Array.isArray(c.values)
                ? c.values[0]?.value
                : 'x'.repeat(Math.max(1, c.validate.minLength ?? 1));
      walk(c.components);
    }
  };
  walk(form?.schema?.components);
  return values;
}

/** Timers due within this are waited for; later ones make the instance `waiting-for-timer`. */
const NEAR_TIMER_MS = 5_000;

/**
 * Starts an instance of the version with no variables and follows it until it ends, holds an
 * incident, or has been still (same revision, no open external or user task, no timer due soon) for `stillMs`.
 * A process with no none start event is started the way it waits to be: its message is
 * published or its signal broadcast once, with no variables; one that starts only on a timer
 * waits for that timer.
 */
export async function runToRest(
  api: ApiClient,
  db: TestDatabase,
  deployed: Deployed,
  steps: PlanStepView[],
  opts: { stillMs?: number; timeoutMs?: number; variables?: Record<string, unknown> } = {},
): Promise<Outcome> {
  const started = await startInstance(api, deployed, steps, opts.variables);
  if (typeof started !== 'string') return started;
  return followToRest(api, db, started, opts);
}

async function startInstance(
  api: ApiClient,
  deployed: Deployed,
  steps: PlanStepView[],
  variables?: Record<string, unknown>,
): Promise<string | Outcome> {
  const starts = steps.filter((s) => s.kind === 'startEvent' && s.scope === undefined && !s.inBody);
  const noneStart = starts.some((s) => s.wait === undefined);
  const message = starts.find((s) => s.wait?.trigger === 'message');
  const signal = starts.find((s) => s.wait?.trigger === 'signal');
  const timer = starts.find((s) => s.wait?.trigger === 'timer');
  let ids: string[];
  if (noneStart) {
    const res = await api.post('/api/instances', { definitionKey: deployed.key, version: deployed.version, variables });
    if (res.status !== 201) return notStarted(res);
    ids = [res.body.id];
  } else if (message) {
    const res = await api.post('/api/messages', { name: message.wait!.name });
    if (res.status !== 201) return notStarted(res);
    ids = [res.body.instanceId];
  } else if (signal) {
    const res = await api.post('/api/signals', { name: signal.wait!.name });
    if (res.status !== 200) return notStarted(res);
    ids = res.body.started;
  } else if (timer) {
    return { outcome: 'waiting-for-timer', at: [timer.id] };
  } else {
    return { outcome: 'not-started', reason: `no start event in the plan of ${deployed.key}` };
  }
  // A signal starts every definition that waits for it: follow the instance of this version.
  for (const id of ids) {
    const instance = (await api.get(`/api/instances/${id}`)).body;
    if (instance.definitionKey === deployed.key && instance.version === deployed.version) return id;
  }
  return {
    outcome: 'not-started',
    reason: `the start event's trigger started no instance of ${deployed.key} v${deployed.version}`,
  };
}

function notStarted(res: { status: number; body: any }): Outcome {
  return { outcome: 'not-started', reason: `${res.status} ${res.body?.message ?? JSON.stringify(res.body)}` };
}

async function followToRest(
  api: ApiClient,
  db: TestDatabase,
  id: string,
  { stillMs = 600, timeoutMs = 20_000 }: { stillMs?: number; timeoutMs?: number },
): Promise<Outcome> {
  const deadline = Date.now() + timeoutMs;
  let last = { revision: -1, since: Date.now() };
  for (;;) {
    const instance = (await api.get(`/api/instances/${id}`)).body;
    if (instance.status === 'completed') return { outcome: 'completed' };
    const incident = instance.incidents?.[0] ?? (await childIncident(api, instance));
    if (incident) return { outcome: 'incident', kind: incident.kind, at: incident.stepId, message: incident.message };
    if (instance.revision !== last.revision) last = { revision: instance.revision, since: Date.now() };
    // Still: nothing left for the generic worker (no open external or user task), no timer due soon.
    const still =
      Date.now() - last.since >= stillMs &&
      instance.tasks.length === 0 &&
      !(await openUserTask(api, id)) &&
      !(await timerDueSoon(db, id));
    if (still || Date.now() > deadline) {
      const outcome = await restingOutcome(api, db, instance);
      // A timer may fire between the read of the instance and the read of its waits: trust
      // the answer only if the instance did not move meanwhile.
      const again = (await api.get(`/api/instances/${id}`)).body;
      if (again.revision === instance.revision || Date.now() > deadline) return outcome;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function childIncident(
  api: ApiClient,
  instance: any,
): Promise<{ kind: string; stepId: string; message: string } | undefined> {
  for (const child of instance.calledInstances ?? []) {
    if (child.openIncidents === 0) continue;
    const detail = (await api.get(`/api/instances/${child.instanceId}`)).body;
    const incident = detail.incidents?.[0];
    if (incident) return { kind: incident.kind, stepId: `${child.stepId}>${incident.stepId}`, message: incident.message };
  }
  return undefined;
}

/** A user task of the instance still open: the generic worker's next round completes it (a loaded machine may take longer than stillMs). */
async function openUserTask(api: ApiClient, instanceId: string): Promise<boolean> {
  const res = await api.get(`/api/user-tasks?instanceId=${instanceId}&limit=1`);
  if (res.status !== 200) throw new Error(`user tasks of ${instanceId} answered ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.items.length > 0;
}

async function timerDueSoon(db: TestDatabase, instanceId: string): Promise<boolean> {
  const { rows } = await db.pool.query(
    `select 1 from timers
      where instance_id = $1 and state = 'waiting' and due_at < now() + make_interval(secs => $2)`,
    [instanceId, NEAR_TIMER_MS / 1000],
  );
  return rows.length > 0;
}

/** A running instance at rest: what its active steps (and those of its called instances) wait for. */
async function restingOutcome(api: ApiClient, db: TestDatabase, instance: any): Promise<Outcome> {
  const waits = await waitsOf(api, db, instance);
  for (const trigger of ['message', 'signal', 'timer'] as const) {
    const at = waits.filter((w) => w.trigger === trigger).map((w) => w.at);
    if (at.length > 0) return { outcome: `waiting-for-${trigger}`, at: at.sort() };
  }
  const active = (instance.steps as { stepId: string; status: string }[]).filter((s) => s.status === 'active');
  return { outcome: 'stuck', status: instance.status, active: active.map((s) => s.stepId).sort() };
}

async function waitsOf(api: ApiClient, db: TestDatabase, instance: any): Promise<{ trigger: string; at: string }[]> {
  const { rows } = await db.pool.query<{ step_id: string; trigger: string }>(
    `select step_id, kind as trigger from subscriptions where instance_id = $1
      union all
     select step_id, 'timer' from timers where instance_id = $1 and state = 'waiting'`,
    [instance.id],
  );
  const own = rows.map((r) => ({ trigger: r.trigger, at: r.step_id }));
  const children = [];
  for (const child of instance.calledInstances ?? []) {
    if (child.status !== 'running') continue;
    const detail = (await api.get(`/api/instances/${child.instanceId}`)).body;
    for (const w of await waitsOf(api, db, detail)) children.push({ trigger: w.trigger, at: `${child.stepId}>${w.at}` });
  }
  return [...own, ...children];
}
