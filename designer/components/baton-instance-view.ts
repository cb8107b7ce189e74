// One instance, live: its version's diagram marked by step status, tasks, incidents,
// variables, the history timeline and the progress log. Updates come from client/live.ts:
// Socket.IO frames, each of which also re-reads the detail.
import { html, nothing, type TemplateResult } from 'lit';
import type { ApiError } from '../client/api-client.ts';
import { api } from '../client/api-client.ts';
import { progressText, watchInstance, type InstanceSnapshot, type LiveState, type LogEntry } from '../client/live.ts';
import type { HistoryEvent } from '../client/types.ts';
import { createViewer } from '../modeler/create-modeler.ts';
import type { Canvas, DiagramElement, DiagramHost, ElementRegistry } from '../modeler/diagram-services.ts';
import { fitViewport } from '../modeler/fit-viewport.ts';
import type StepStatusMarkers from '../modeler/status/step-status-markers.ts';
import { formatTime, LightElement, shortId } from './light-element.ts';
import './baton-variables-editor.ts';
import { layoutWhenMissing } from '../modeler/auto-layout.ts';

export class BatonInstanceView extends LightElement {
  static override properties = {
    instanceId: { type: String },
    snapshot: { state: true },
    error: { state: true },
    actionError: { state: true },
    log: { state: true },
    liveState: { state: true },
    liveMessage: { state: true },
    names: { state: true },
  };
  declare instanceId: string;
  declare snapshot: InstanceSnapshot | undefined;
  declare error: string;
  declare actionError: string;
  declare log: readonly LogEntry[];
  declare liveState: LiveState;
  declare liveMessage: string;
  /** element names of the instance's diagram, by id: run views name steps as the analyst drew them */
  declare names: ReadonlyMap<string, string>;
  private viewer: DiagramHost | undefined;
  private diagramLoaded: Promise<void> | undefined;
  private diagramVersion: number | undefined;
  private stop: (() => void) | undefined;

  constructor() {
    super();
    this.instanceId = '';
    this.snapshot = undefined;
    this.error = '';
    this.actionError = '';
    this.log = [];
    this.liveState = 'connecting';
    this.liveMessage = '';
    this.names = new Map();
  }

  override firstUpdated(): void {
    this.viewer = createViewer(this.querySelector('.canvas') as HTMLElement);
    this.stop = watchInstance(this.instanceId, {
      onSnapshot: (s) => void this.onSnapshot(s),
      onLog: (entries) => (this.log = [...entries]),
      onState: (state, message) => {
        this.liveState = state;
        this.liveMessage = message ?? '';
      },
      onError: (err: ApiError) => {
        this.error = err.status === 404 ? `No instance ${this.instanceId}` : `Live updates paused: ${err.message}`;
      },
    });
  }

  override disconnectedCallback(): void {
    this.stop?.();
    this.viewer?.destroy();
    super.disconnectedCallback();
  }

  private async onSnapshot(s: InstanceSnapshot): Promise<void> {
    this.snapshot = s;
    this.error = '';
    // A migration moves the instance to another version: its diagram is read again.
    if (this.diagramVersion !== s.detail.version) {
      this.diagramVersion = s.detail.version;
      this.diagramLoaded = this.loadDiagram(s.detail.definitionKey, s.detail.version);
    }
    await this.diagramLoaded;
    this.viewer?.get<StepStatusMarkers>('stepStatusMarkers').show(this.snapshot.detail);
  }

  /** The instance's own version, not the latest: the plan it is pinned to. */
  private async loadDiagram(key: string, version: number): Promise<void> {
    try {
      const definition = await api.getDefinition(key, version);
      await this.viewer!.importXML((await layoutWhenMissing(definition.xml)).xml);
      fitViewport(this.viewer!.get<Canvas>('canvas'));
      const elements = this.viewer!.get<ElementRegistry>('elementRegistry').getAll() as DiagramElement[];
      this.names = new Map(elements.flatMap((e) => (e.businessObject?.name ? [[e.id, String(e.businessObject.name)]] : [])));
    } catch (err) {
      this.error = `The diagram of ${key} v${version} could not be shown: ${(err as Error).message}`;
    }
  }

  /** Reads the detail again now, without waiting for a frame (the variables editor's Reload). */
  private reload(): void {
    Promise.all([api.getInstance(this.instanceId), api.getWholeHistory(this.instanceId)]).then(
      ([detail, history]) => void this.onSnapshot({ detail, history }),
      (err: ApiError) => (this.actionError = err.message),
    );
  }

  private async act(action: () => Promise<unknown>): Promise<void> {
    try {
      await action();
      this.actionError = '';
    } catch (err) {
      this.actionError = (err as ApiError).message;
    }
  }

  private cancel(): Promise<void> {
    if (!confirm('Cancel this instance? Open tasks are withdrawn from their workers.')) return Promise.resolve();
    return this.act(() => api.cancelInstance(this.instanceId));
  }

  /** A step by its name, with its id as the tooltip; by its id when it has no name. */
  private step(stepId: string): TemplateResult {
    if (stepId.startsWith('loop:'))
      return html`<span class="step-name" data-step-id=${stepId} title=${stepId}>loop at ${this.step(stepId.slice(5))}</span>`;
    const name = this.names.get(stepId);
    return name
      ? html`<span class="step-name" data-step-id=${stepId} title=${stepId}>${name}</span>`
      : html`<code data-step-id=${stepId}>${stepId}</code>`;
  }

  /** Says why a gateway took the flow it took when a condition read a variable the instance lacks. */
  private decisionNote(e: HistoryEvent) {
    const missing = e.data?.missingVariables;
    if (!Array.isArray(missing) || missing.length === 0) return nothing;
    const vars = missing.map((v) => `"${String(v)}"`).join(', ');
    const taken = Array.isArray(e.data.taken) ? e.data.taken.map((id) => this.names.get(String(id)) ?? String(id)) : [];
    const outcome =
      e.kind === 'incident:created'
        ? 'no flow was left'
        : e.data.byDefault
          ? 'the default flow was taken'
          : `took ${taken.join(', ')}`;
    return html`<span class="decision-note">${vars} ${missing.length === 1 ? 'was' : 'were'} not set, so the conditions reading ${missing.length === 1 ? 'it' : 'them'} did not hold: ${outcome}</span>`;
  }

  /** Newest first; the events of one scope instance (a loop's pass) that follow one another form a group of their own. */
  private renderHistory(history: HistoryEvent[]) {
    if (history.length === 0) return html`<p class="empty">No history yet.</p>`;
    const groups: { scopePath?: string; events: HistoryEvent[] }[] = [];
    for (const e of [...history].reverse()) {
      const scopePath = typeof e.data?.scopePath === 'string' ? e.data.scopePath : undefined;
      const last = groups.at(-1);
      if (last && last.scopePath === scopePath) last.events.push(e);
      else groups.push({ ...(scopePath !== undefined ? { scopePath } : {}), events: [e] });
    }
    return html`<ol class="timeline">${groups.map((g) =>
      g.scopePath === undefined
        ? g.events.map((e) => this.historyItem(e))
        : html`<li class="scope-group" data-scope-path=${g.scopePath}><details open>
            <summary>${this.scopeTitle(g.scopePath)} <span class="count">${g.events.length} ${g.events.length === 1 ? 'event' : 'events'}</span></summary>
            <ol class="timeline">${g.events.map((e) => this.historyItem(e))}</ol>
          </details></li>`,
    )}</ol>`;
  }

  private historyItem(e: HistoryEvent): TemplateResult {
    return html`<li>
      <time>${formatTime(e.at)}</time> <span class="kind">${e.kind}</span>
      ${e.stepId ? this.step(e.stepId) : nothing}
      ${this.decisionNote(e)}
      ${Object.keys(e.data ?? {}).length ? html`<span class="data">${JSON.stringify(e.data)}</span>` : nothing}
    </li>`;
  }

  /** The innermost scope of a scope path and its pass or firing, e.g. "loop at Review, pass 2" or "Reminder, firing 3". */
  private scopeTitle(scopePath: string): TemplateResult {
    const inner = scopePath.split('/').filter(Boolean).at(-1) ?? '';
    const loopId = inner.split('#')[0] ?? inner;
    return html`${this.step(loopId)}, <span class="pass">${passOf(scopePath)}</span>`;
  }

  private renderLog() {
    const lines = this.log.map((entry) => {
      if (entry.type === 'gap')
        return html`<li class="log-gap">frames ${entry.fromSeq}–${entry.toSeq} of generation ${entry.generation} were deleted by retention</li>`;
      if (entry.type === 'generation') return html`<li class="log-generation">replayed: generation ${entry.generation}</li>`;
      const f = entry.frame;
      const stepId = typeof f.data.stepId === 'string' ? f.data.stepId : undefined;
      return html`<li data-seq=${f.seq} data-kind=${f.kind}>
        <span class="seq">#${f.seq}</span> <time>${formatTime(f.at)}</time> <span class="kind">${f.kind}</span>
        ${stepId ? this.step(stepId) : nothing}
        ${f.kind === 'task:progress' ? html`<span class="progress-text">${progressText(f)}</span>` : nothing}
      </li>`;
    });
    const state = {
      connecting: 'connecting…',
      live: 'live',
      offline: 'offline: will catch up when the network is back',
      reconnecting: 'reconnecting…',
      refused: 'refused',
    }[this.liveState];
    return html`<section aria-label="Progress log" class="progress"><h2>Progress log
        <span class="live-state live-${this.liveState}" data-state=${this.liveState}>${state}${this.liveMessage ? `: ${this.liveMessage}` : ''}</span></h2>
      ${lines.length === 0 ? html`<p class="empty">No frames yet.</p>` : html`<ol class="progress-log" aria-live="polite">${lines}</ol>`}
    </section>`;
  }

  private renderDetail(s: InstanceSnapshot) {
    const d = s.detail;
    const open = d.status === 'running' || d.status === 'incident';
    return html`
      <div class="page-head">
        <h1>Instance ${d.businessKey ?? nothing} <code title=${d.id}>${shortId(d.id)}</code> <span class="status status-${d.status}" data-status=${d.status}>${d.status}</span>
          ${d.suspended ? html`<span class="status status-suspended" title=${`suspended ${formatTime(d.suspendedAt ?? '')}`}>suspended</span>` : nothing}</h1>
        <div class="actions">${
          open
            ? html`${
                d.suspended
                  ? html`<button @click=${() => this.act(() => api.resumeInstance(this.instanceId))}>Resume</button>`
                  : html`<button title="Its tasks are not handed out and its timers wait until it is resumed" @click=${() => this.act(() => api.suspendInstance(this.instanceId))}>Suspend</button>`
              }
              <button class="danger" @click=${() => this.cancel()}>Cancel instance</button>`
            : nothing
        }</div>
      </div>
      <p class="meta">
        <a href="#/definitions/${encodeURIComponent(d.definitionKey)}?version=${d.version}">${d.definitionKey} v${d.version}</a>
        · business key ${d.businessKey ?? '—'} · started ${formatTime(d.createdAt)}${d.endedAt ? html` · ended ${formatTime(d.endedAt)}` : nothing}
        ${
          d.parent
            ? html`· called by <a class="parent-link" href="#/instances/${d.parent.instanceId}"><code title=${d.parent.instanceId}>${shortId(d.parent.instanceId)}</code></a>
              at <code>${d.parent.stepId}</code>`
            : nothing
        }
      </p>
      ${this.actionError ? html`<p class="error" role="alert">${this.actionError}</p>` : nothing}
      <div class="panels">
        <section aria-label="Incidents"><h2>Incidents</h2>
          ${
            d.incidents.length === 0
              ? html`<p class="empty">None open.</p>`
              : html`<ul class="incidents">${d.incidents.map(
                  (i) => html`<li>
            ${this.step(i.stepId)} <span class="kind">${i.kind}</span> ${i.message}
            <button @click=${() => this.act(() => api.retryIncident(i.id))}>Retry</button></li>`,
                )}</ul>`
          }
        </section>
        <section aria-label="Open tasks"><h2>Open tasks</h2>
          ${
            d.tasks.length === 0
              ? html`<p class="empty">None.</p>`
              : html`<table class="data tasks">
            <thead><tr><th>Step</th><th>Topic</th><th>State</th><th>Worker</th><th>Lock expires</th><th>Attempt</th><th>Retries left</th></tr></thead>
            <tbody>${d.tasks.map(
              (t) => html`<tr data-step-id=${t.stepId}>
              <td>${this.step(t.stepId)}</td><td>${t.topic}</td><td>${t.state}</td><td>${t.workerId ?? '—'}</td>
              <td>${formatTime(t.lockExpiresAt)}</td><td>${t.attempt}</td><td>${t.retriesLeft}</td></tr>`,
            )}</tbody></table>`
          }
        </section>
        ${d.calledInstances.length > 0 ? this.renderCalled(d) : nothing}
        <section aria-label="Variables"><h2>Variables <span class="revision">revision ${d.revision}</span></h2>
          <baton-variables-editor .instanceId=${d.id} .variables=${d.variables} .revision=${d.revision} .editable=${open}
            @baton-reload=${() => this.reload()}></baton-variables-editor></section>
        ${this.renderLog()}
        <section aria-label="History"><h2>History</h2>${this.renderHistory(s.history)}</section>
      </div>`;
  }

  // A child's incident shows here, next to the call activity that waits for it.
  private renderCalled(d: InstanceSnapshot['detail']) {
    return html`<section aria-label="Called instances"><h2>Called instances</h2>
      <table class="data called">
        <thead><tr><th>Step</th><th>Instance</th><th>Process</th><th>Status</th><th>Open incidents</th></tr></thead>
        <tbody>${d.calledInstances.map(
          (c) => html`<tr data-step-id=${c.stepId}>
          <td>${this.step(c.stepId)}${c.scopePath ? html` <span class="pass">${passOf(c.scopePath)}</span>` : nothing}</td>
          <td><a href="#/instances/${c.instanceId}"><code title=${c.instanceId}>${shortId(c.instanceId)}</code></a></td>
          <td>${c.definitionKey} v${c.definitionVersion}</td>
          <td><span class="status status-${c.status}">${c.status}</span></td><td>${c.openIncidents}</td></tr>`,
        )}</tbody></table></section>`;
  }

  override render() {
    return html`<section class="page instance-view">
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      <div class="canvas viewer" aria-label="Instance diagram"></div>
      <div class="legend">${['active', 'completed', 'skipped', 'incident', 'canceled'].map((s) => html`<span class="legend-${s}">${s}</span>`)}
        <span class="legend-taken">flow taken</span></div>
      ${this.snapshot ? this.renderDetail(this.snapshot) : html`<p class="empty">Loading…</p>`}
    </section>`;
  }
}

customElements.define('baton-instance-view', BatonInstanceView);

/** "pass 2", or "pass 1 of loop:outer, pass 3" for nested loops, from a scope path such as `/loop:outer#1/loop:draft#3`. */
function passOf(scopePath: string): string {
  const passes = scopePath
    .split('/')
    .filter(Boolean)
    .map((part) => part.split('#'));
  // A loop's steps are `loop:<head>`; any other scope is a repeating boundary or a non-interrupting event subprocess, which fires.
  const unit = (scope = '') => (scope.startsWith('loop:') ? 'pass' : 'firing');
  return passes
    .map(([scope, n], i) => (i === passes.length - 1 ? `${unit(scope)} ${n}` : `${unit(scope)} ${n} of ${scope}`))
    .join(', ');
}
