// The tasklist: the user tasks of the signed-in person ("Mine"), those their groups may claim ("My
// groups") and, for operators, all open ones. Live: every `userTask` event of the `/tasks` stream
// re-reads the list (client/live.ts merges a burst into one read).
import { html, nothing } from 'lit';
import { api, ApiError } from '../client/api-client.ts';
import { watchUserTasks, type LiveState } from '../client/live.ts';
import { filterOf, signIn, tabsFor, TaskTab, type Person } from '../client/person.ts';
import type { UserTask } from '../client/types.ts';
import { formatTime, LightElement } from './light-element.ts';
import type { PersonChange } from './baton-sign-in.ts';
import './baton-sign-in.ts';

const PAGE = 50;

const TAB_LABELS: Record<TaskTab, string> = { mine: 'Mine', groups: 'My groups', all: 'All' };

export const LIVE_LABELS: Record<LiveState, string> = {
  connecting: 'connecting…',
  live: 'live',
  offline: 'offline: the list is read every few seconds',
  reconnecting: 'reconnecting…',
  refused: 'not live',
};

export class BatonTaskList extends LightElement {
  static override properties = {
    tab: { type: String },
    person: { state: true },
    tasks: { state: true },
    nextCursor: { state: true },
    error: { state: true },
    liveState: { state: true },
    liveMessage: { state: true },
  };
  /** the tab the route asks for; a tab the person does not have falls back to their first */
  declare tab: string;
  declare person: Person | undefined;
  declare tasks: UserTask[] | undefined;
  declare nextCursor: string | undefined;
  declare error: string;
  declare liveState: LiveState;
  declare liveMessage: string;
  private stop: (() => void) | undefined;
  /** answers to older reads are dropped */
  private readSeq = 0;

  constructor() {
    super();
    this.tab = '';
    this.person = undefined;
    this.tasks = undefined;
    this.nextCursor = undefined;
    this.error = '';
    this.liveState = 'connecting';
    this.liveMessage = '';
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.addEventListener('baton-person-change', this.onPersonChange);
    void this.start();
  }

  override disconnectedCallback(): void {
    this.removeEventListener('baton-person-change', this.onPersonChange);
    this.stop?.();
    super.disconnectedCallback();
  }

  private readonly onPersonChange = (e: Event) => {
    const change = (e as CustomEvent<PersonChange>).detail;
    void (change.person ? Promise.resolve((this.person = change.person)) : this.loadPerson(change.ask)).then(() => this.read());
  };

  private async start(): Promise<void> {
    await this.loadPerson();
    if (!this.isConnected) return;
    void this.read();
    this.stop = watchUserTasks({
      onChange: () => void this.read(),
      onState: (state, message) => {
        this.liveState = state;
        this.liveMessage = message ?? '';
      },
    });
  }

  private async loadPerson(ask?: boolean): Promise<void> {
    try {
      this.person = await signIn(ask);
      this.error = '';
    } catch (err) {
      this.error = (err as Error).message;
    }
  }

  private get currentTab(): TaskTab | undefined {
    const tabs = this.person ? tabsFor(this.person) : [];
    return tabs.find((t) => t === this.tab) ?? tabs[0];
  }

  /** Reads the first page again, as many tasks as are shown (the pages loaded stay loaded). */
  private async read(): Promise<void> {
    const tab = this.currentTab;
    if (!this.person || !tab) {
      this.tasks = [];
      return;
    }
    const seq = ++this.readSeq;
    const limit = Math.min(500, Math.max(PAGE, this.tasks?.length ?? 0));
    try {
      const page = await api.listUserTasks({ ...filterOf(tab, this.person), limit });
      if (seq !== this.readSeq) return;
      this.tasks = page.items;
      this.nextCursor = page.nextCursor;
      this.error = '';
    } catch (err) {
      if (seq === this.readSeq) this.error = err instanceof ApiError ? err.message : String(err);
    }
  }

  private async more(): Promise<void> {
    const tab = this.currentTab;
    if (!this.person || !tab || !this.nextCursor) return;
    const seq = ++this.readSeq;
    try {
      const page = await api.listUserTasks({ ...filterOf(tab, this.person), limit: PAGE, cursor: this.nextCursor });
      if (seq !== this.readSeq) return;
      this.tasks = [...(this.tasks ?? []), ...page.items];
      this.nextCursor = page.nextCursor;
    } catch (err) {
      this.error = (err as Error).message;
    }
  }

  private renderTabs() {
    const current = this.currentTab;
    const tabs = this.person ? tabsFor(this.person) : [];
    if (tabs.length === 0) return nothing;
    return html`<nav class="tabs" role="tablist" aria-label="Which tasks">${tabs.map(
      (t) => html`<a role="tab" href="#/tasks?tab=${t}" aria-selected=${t === current ? 'true' : 'false'}>${TAB_LABELS[t]}</a>`,
    )}</nav>`;
  }

  private renderRows(tasks: UserTask[]) {
    if (!this.currentTab) return html`<p class="empty">Sign in to see your tasks.</p>`;
    if (tasks.length === 0) {
      const empty = this.currentTab === TaskTab.mine ? 'You hold no tasks: claim one under "My groups".' : 'No open tasks.';
      return html`<p class="empty">${empty}</p>`;
    }
    return html`<table class="data user-tasks">
      <thead><tr><th>Task</th><th>Process</th><th>Assignee</th><th>Due</th><th>Priority</th><th>Created</th></tr></thead>
      <tbody>${tasks.map(
        (t) => html`<tr data-task-id=${t.id} data-step-id=${t.stepId}>
          <td><a href="#/tasks/${t.id}">${t.name ?? t.stepId}</a></td>
          <td>${t.definitionKey}${t.businessKey ? html` · <span class="business-key">${t.businessKey}</span>` : nothing}</td>
          <td class="assignee">${t.assignee ?? html`<span class="empty">nobody</span>`}</td>
          <td class=${t.dueAt && Date.parse(t.dueAt) < Date.now() ? 'overdue' : ''}>${formatTime(t.dueAt)}</td>
          <td>${t.priority}</td>
          <td>${formatTime(t.createdAt)}</td>
        </tr>`,
      )}</tbody></table>
      ${this.nextCursor ? html`<button type="button" @click=${() => void this.more()}>Load more</button>` : nothing}`;
  }

  override render() {
    return html`<section class="page task-list">
      <div class="page-head">
        <h1>Tasks <span class="live-state live-${this.liveState}" data-state=${this.liveState}
          title=${this.liveMessage}>${LIVE_LABELS[this.liveState]}</span></h1>
        <baton-sign-in .person=${this.person}></baton-sign-in>
      </div>
      ${this.renderTabs()}
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${this.tasks ? this.renderRows(this.tasks) : html`<p class="empty">Loading…</p>`}
    </section>`;
  }
}

customElements.define('baton-task-list', BatonTaskList);
