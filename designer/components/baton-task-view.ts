// One user task: where it stands in its process (the diagram, the task's element marked), who
// holds it (Claim / Release), and its form, which only the holder can fill in and complete. The
// `/tasks` stream re-reads the task when someone else claims, releases or ends it.
import { html, nothing } from 'lit';
import { api, ApiError } from '../client/api-client.ts';
import { watchUserTasks, type LiveState } from '../client/live.ts';
import { actorOf, holds, signIn, type Person } from '../client/person.ts';
import type { FormProblem, UserTaskDetail, UserTaskRaise } from '../client/types.ts';
import { formSchemaOf } from '../forms/form-schema.ts';
import { createViewer } from '../modeler/create-modeler.ts';
import type { Canvas, DiagramHost } from '../modeler/diagram-services.ts';
import { fitViewport } from '../modeler/fit-viewport.ts';
import { formatTime, LightElement, shortId } from './light-element.ts';
import type { BatonTaskForm } from './baton-task-form.ts';
import { LIVE_LABELS } from './baton-task-list.ts';
import type { PersonChange } from './baton-sign-in.ts';
import './baton-sign-in.ts';
import './baton-task-form.ts';
import { layoutWhenMissing } from '../modeler/auto-layout.ts';

/** What became of the task: still open, completed here, ended here by a boundary its holder raised, or ended elsewhere (completed by another, canceled). */
type Outcome =
  | { kind: 'open' }
  | { kind: 'completed'; instanceId: string }
  | { kind: 'raised'; instanceId: string; label: string }
  | { kind: 'gone' };

export class BatonTaskView extends LightElement {
  static override properties = {
    taskId: { type: String },
    person: { state: true },
    task: { state: true },
    outcome: { state: true },
    error: { state: true },
    actionError: { state: true },
    actionNote: { state: true },
    diagramNote: { state: true },
    busy: { state: true },
    liveState: { state: true },
  };
  declare taskId: string;
  declare person: Person | undefined;
  declare task: UserTaskDetail | undefined;
  declare outcome: Outcome;
  declare error: string;
  declare actionError: string;
  /** what a raise that left the task open did */
  declare actionNote: string;
  declare diagramNote: string;
  declare busy: boolean;
  declare liveState: LiveState;
  private viewer: DiagramHost | undefined;
  private diagramLoaded = false;
  private stop: (() => void) | undefined;
  /** a live change arrived while an action was in flight: read again once its answer is in */
  private changedWhileBusy = false;

  constructor() {
    super();
    this.taskId = '';
    this.person = undefined;
    this.task = undefined;
    this.outcome = { kind: 'open' };
    this.error = '';
    this.actionError = '';
    this.actionNote = '';
    this.diagramNote = '';
    this.busy = false;
    this.liveState = 'connecting';
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.addEventListener('baton-person-change', this.onPersonChange);
  }

  override async firstUpdated(): Promise<void> {
    this.viewer = createViewer(this.querySelector('.canvas') as HTMLElement);
    this.person = await signIn().catch((err: Error) => {
      this.error = err.message;
      return undefined;
    });
    await this.readTask();
    if (!this.isConnected) return;
    this.stop = watchUserTasks({
      onChange: (events) => {
        if (events.length === 0 || events.some((e) => e.id === this.taskId)) void this.readTask();
      },
      onState: (state) => (this.liveState = state),
    });
  }

  override disconnectedCallback(): void {
    this.removeEventListener('baton-person-change', this.onPersonChange);
    this.stop?.();
    this.viewer?.destroy();
    super.disconnectedCallback();
  }

  private readonly onPersonChange = (e: Event) => {
    const change = (e as CustomEvent<PersonChange>).detail;
    if (change.person) this.person = change.person;
    else void signIn(change.ask).then((p) => (this.person = p));
  };

  private async readTask(): Promise<void> {
    if (this.outcome.kind !== 'open') return;
    // The action's own answer says what became of the task; a read racing it would find an ended task gone (404).
    if (this.busy) {
      this.changedWhileBusy = true;
      return;
    }
    try {
      this.task = await api.getUserTask(this.taskId);
      this.error = '';
      if (!this.diagramLoaded) {
        this.diagramLoaded = true;
        await this.updateComplete;
        await this.loadDiagram(this.task);
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        if (this.task && this.outcome.kind === 'open') this.outcome = { kind: 'gone' };
        else this.error = `No open user task ${this.taskId}: it was completed or canceled`;
      } else this.error = (err as Error).message;
    }
  }

  /** The instance's own version when the token may read the instance, else the latest one. */
  private async loadDiagram(task: UserTaskDetail): Promise<void> {
    try {
      const version = await api.getInstance(task.instanceId).then(
        (i) => i.version,
        () => undefined,
      );
      const definition = await api.getDefinition(task.definitionKey, version);
      await this.viewer!.importXML((await layoutWhenMissing(definition.xml)).xml);
      const canvas = this.viewer!.get<Canvas>('canvas');
      fitViewport(canvas);
      canvas.addMarker(task.stepId, 'baton-task-current');
    } catch (err) {
      this.diagramNote = `The diagram of ${task.definitionKey} could not be shown: ${(err as Error).message}`;
    }
  }

  private async act(action: () => Promise<void>): Promise<void> {
    this.busy = true;
    this.actionError = '';
    try {
      await action();
    } catch (err) {
      this.actionError = (err as Error).message;
    } finally {
      this.busy = false;
    }
    if (this.changedWhileBusy) {
      this.changedWhileBusy = false;
      await this.readTask();
    }
  }

  private claim(release: boolean): Promise<void> {
    return this.act(async () => {
      const actor = actorOf(this.person!);
      const changed = release ? await api.unclaimUserTask(this.taskId, actor) : await api.claimUserTask(this.taskId, actor);
      this.task = { ...this.task!, ...changed };
    });
  }

  private complete(): Promise<void> {
    const form = this.querySelector<BatonTaskForm>('baton-task-form');
    const read = form ? form.read() : { ok: true as const, variables: {} };
    if (!read.ok) {
      this.actionError = 'Some fields need another value: see the messages under them.';
      return Promise.resolve();
    }
    return this.act(async () => {
      try {
        const done = await api.completeUserTask(this.taskId, actorOf(this.person!), read.variables);
        this.outcome = { kind: 'completed', instanceId: done.instanceId };
      } catch (err) {
        const problems = err instanceof ApiError && err.status === 400 ? fieldsOf(err.details) : [];
        if (problems.length === 0 || !form) throw err;
        const unplaced = form.showProblems(problems);
        throw new Error(
          unplaced.length > 0
            ? unplaced.map((p) => p.message).join('; ')
            : 'The server refused some fields: see the messages under them.',
          { cause: err },
        );
      }
    });
  }

  /** The holder raises the error or escalation a boundary on the task catches, instead of completing it. */
  private raise(r: UserTaskRaise & { code: string }): Promise<void> {
    const label = r.name ?? r.code;
    this.actionNote = '';
    return this.act(async () => {
      const actor = actorOf(this.person!);
      if (r.kind === 'error') {
        const done = await api.throwUserTaskError(this.taskId, actor, r.code);
        this.outcome = { kind: 'raised', instanceId: done.instanceId, label };
        return;
      }
      const done = await api.raiseUserTaskEscalation(this.taskId, actor, r.code);
      if (!done.taskOpen) this.outcome = { kind: 'raised', instanceId: done.instanceId, label };
      else this.actionNote = `Escalated: "${label}" runs beside this task, which stays with you.`;
    });
  }

  private renderActions(t: UserTaskDetail, p: Person) {
    const mine = holds(p, t);
    const claimable = p.name !== null && t.assignee === null;
    const raises = (t.raises ?? []).filter((r): r is UserTaskRaise & { code: string } => r.code !== null);
    // A catch-all boundary catches any code: the holder types the one to raise.
    const catchAll = (t.raises ?? []).filter((r) => r.code === null);
    return html`<div class="actions">
      ${claimable ? html`<button class="primary" ?disabled=${this.busy} @click=${() => this.claim(false)}>Claim</button>` : nothing}
      ${mine ? html`<button ?disabled=${this.busy} @click=${() => this.claim(true)}>Release</button>` : nothing}
      <button class="primary complete" ?disabled=${this.busy || !mine} @click=${() => this.complete()}
        title=${mine ? 'Complete the task with the form' : 'Claim the task to complete it'}>Complete</button>
      ${raises.map(
        (r) => html`<button class="raise" data-boundary=${r.boundaryId} ?disabled=${this.busy || !mine}
          @click=${() => this.raise(r)}
          title=${`${r.kind === 'error' ? 'Report error' : 'Raise escalation'} ${r.code}: ${
            r.kind === 'error' || r.interrupting
              ? 'the task ends and the process takes that path'
              : 'that path runs beside the task'
          }`}>${r.name ?? r.code}</button>`,
      )}
      ${catchAll.map((r) => {
        const what = r.kind === 'error' ? 'error' : 'escalation';
        return html`<form class="raise-any" data-boundary=${r.boundaryId}
          @submit=${(e: Event) => this.raiseTyped(e, r)}>
          <input name="code" aria-label=${`Code of the ${what} to raise`} placeholder=${`${what} code`}
            maxlength="256" ?disabled=${this.busy || !mine} />
          <button class="raise" type="submit" ?disabled=${this.busy || !mine}
            title=${`Raise the ${what} whose code you type: ${
              r.kind === 'error' || r.interrupting
                ? 'the task ends and the process takes that path'
                : 'that path runs beside the task'
            }`}>${r.name ?? (r.kind === 'error' ? 'Report error' : 'Raise escalation')}</button>
        </form>`;
      })}
    </div>`;
  }

  /** A catch-all boundary's form: the code typed in is the one raised. */
  private raiseTyped(e: Event, r: UserTaskRaise): Promise<void> {
    e.preventDefault();
    const code = new FormData(e.target as HTMLFormElement).get('code')?.toString().trim() ?? '';
    if (code === '') {
      this.actionError = `Type the ${r.kind} code to raise first.`;
      return Promise.resolve();
    }
    return this.raise({ ...r, code });
  }

  private renderTask(t: UserTaskDetail, p: Person | undefined) {
    const schema = formSchemaOf(t.form, t.id);
    const mine = p !== undefined && holds(p, t);
    const who = t.assignee
      ? html`held by <strong class="assignee">${t.assignee}</strong>${mine ? ' (you)' : ''}`
      : html`<span class="assignee">nobody holds it</span>`;
    const candidates = [...t.candidateUsers, ...t.candidateGroups.map((g) => `group ${g}`)];
    return html`
      <p class="meta">${t.definitionKey}${t.businessKey ? ` · ${t.businessKey}` : ''} · ${who}
        · candidates ${candidates.length > 0 ? candidates.join(', ') : 'everyone'} · due ${formatTime(t.dueAt)}
        · priority ${t.priority} · created ${formatTime(t.createdAt)}
        · instance <a href="#/instances/${t.instanceId}"><code title=${t.instanceId}>${shortId(t.instanceId)}</code></a></p>
      ${p ? this.renderActions(t, p) : nothing}
      ${this.actionError ? html`<p class="error" role="alert">${this.actionError}</p>` : nothing}
      ${this.actionNote ? html`<p class="notice action-note" role="status">${this.actionNote}</p>` : nothing}
      <section class="task-form" aria-label="Form">
        ${
          schema
            ? html`<baton-task-form .schema=${schema} .data=${t.variables ?? {}} .readOnly=${!mine}
                @baton-form-change=${() => (this.actionError = '')}></baton-task-form>`
            : html`<p class="empty">${t.form.formKey ? `This task's form is "${t.form.formKey}", which Baton does not draw.` : 'This task has no form.'}
              Completing it sets no variables.</p>`
        }
      </section>`;
  }

  private renderOutcome() {
    if (this.outcome.kind === 'completed') {
      const id = this.outcome.instanceId;
      return html`<div class="task-outcome" role="status">
        <p><strong>Completed.</strong> The process goes on:
          <a class="instance-link" href="#/instances/${id}">see instance <code title=${id}>${shortId(id)}</code></a>
          · <a href="#/tasks">back to your tasks</a></p></div>`;
    }
    if (this.outcome.kind === 'raised') {
      const id = this.outcome.instanceId;
      return html`<div class="task-outcome" role="status">
        <p><strong>${this.outcome.label}.</strong> The task has ended and the process takes that path:
          <a class="instance-link" href="#/instances/${id}">see instance <code title=${id}>${shortId(id)}</code></a>
          · <a href="#/tasks">back to your tasks</a></p></div>`;
    }
    return html`<div class="task-outcome" role="status">
      <p>This task has ended: someone completed it or the process withdrew it. <a href="#/tasks">Back to your tasks</a></p></div>`;
  }

  override render() {
    const t = this.task;
    return html`<section class="page task-view">
      <div class="page-head">
        <h1>${t ? (t.name ?? t.stepId) : 'Task'} <span class="live-state live-${this.liveState}" data-state=${this.liveState}>${LIVE_LABELS[this.liveState]}</span></h1>
        <baton-sign-in .person=${this.person}></baton-sign-in>
      </div>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${this.outcome.kind !== 'open' ? this.renderOutcome() : t ? this.renderTask(t, this.person) : html`<p class="empty">Loading…</p>`}
      ${this.diagramNote ? html`<p class="empty">${this.diagramNote}</p>` : nothing}
      <div class="canvas viewer task-diagram" aria-label="Where the task stands in its process"></div>
    </section>`;
  }
}

customElements.define('baton-task-view', BatonTaskView);

/** details.fields of a 400 ValidationError. */
function fieldsOf(details: unknown): FormProblem[] {
  const fields = (details as { fields?: unknown } | undefined)?.fields;
  return Array.isArray(fields)
    ? fields.filter((f): f is FormProblem => typeof f?.field === 'string' && typeof f?.message === 'string')
    : [];
}
