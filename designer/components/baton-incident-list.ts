// Open incidents, newest first: filter by process and kind, paged by cursor. Selecting one shows
// its worker error and stack trace with a retry; ticked ones are retried together.
import { html, nothing } from 'lit';
import type { ApiError } from '../client/api-client.ts';
import { api } from '../client/api-client.ts';
import { pollEvery } from '../client/live.ts';
import type { IncidentFilter, IncidentItem, RetryResult } from '../client/types.ts';
import { formatTime, LightElement, shortId } from './light-element.ts';

const PAGE_SIZE = 20;

/** The kinds of schemas/api/incident-filter.schema.json, for the filter. */
const KINDS = [
  'task_failed',
  'bpmn_error',
  'no_matching_flow',
  'condition_error',
  'join_skipped',
  'io_mapping',
  'script_error',
  'call_activity',
];

export class BatonIncidentList extends LightElement {
  static override properties = {
    definitionKey: { type: String },
    kind: { type: String },
    items: { state: true },
    nextCursor: { state: true },
    cursors: { state: true },
    error: { state: true },
    loaded: { state: true },
    keys: { state: true },
    selected: { state: true },
    ticked: { state: true },
    notice: { state: true },
  };
  declare definitionKey: string;
  declare kind: string;
  declare items: IncidentItem[];
  declare nextCursor: string | undefined;
  /** cursors of the pages before the current one; the last is the current page's */
  declare cursors: string[];
  declare error: string;
  declare loaded: boolean;
  declare keys: string[];
  /** the incident whose details show; kept while the list refreshes, even once it is resolved */
  declare selected: IncidentItem | undefined;
  declare ticked: ReadonlySet<string>;
  /** what the last retry did */
  declare notice: string;
  private stop: (() => void) | undefined;

  constructor() {
    super();
    this.definitionKey = '';
    this.kind = '';
    this.items = [];
    this.nextCursor = undefined;
    this.cursors = [];
    this.error = '';
    this.loaded = false;
    this.keys = [];
    this.selected = undefined;
    this.ticked = new Set();
    this.notice = '';
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.follow();
    api.listDefinitions().then(
      (defs) => (this.keys = [...new Set(defs.map((d) => d.key))]),
      () => undefined,
    );
  }

  override disconnectedCallback(): void {
    this.stop?.();
    super.disconnectedCallback();
  }

  private filter(): IncidentFilter {
    const cursor = this.cursors.at(-1);
    return {
      definitionKey: this.definitionKey || undefined,
      kind: this.kind || undefined,
      limit: PAGE_SIZE,
      ...(cursor ? { cursor } : {}),
    };
  }

  /** (Re)starts following the current page: retried incidents leave it, new ones come in. */
  private follow(): void {
    this.stop?.();
    const filter = this.filter();
    this.stop = pollEvery(
      () => api.listIncidents(filter),
      (page) => {
        this.items = page.items;
        this.nextCursor = page.nextCursor;
        const open = new Set(page.items.map((i) => i.id));
        this.ticked = new Set([...this.ticked].filter((id) => open.has(id)));
        this.error = '';
        this.loaded = true;
      },
      (err: ApiError) => (this.error = err.message),
    );
  }

  private applyFilter(e: Event): void {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const value = (name: string) => ((form.elements.namedItem(name) as HTMLSelectElement).value ?? '').trim();
    this.definitionKey = value('definitionKey');
    this.kind = value('kind');
    this.cursors = [];
    this.ticked = new Set();
    this.follow();
  }

  private page(direction: 'next' | 'first'): void {
    this.cursors = direction === 'next' && this.nextCursor ? [...this.cursors, this.nextCursor] : [];
    this.follow();
  }

  private tick(id: string, on: boolean): void {
    const next = new Set(this.ticked);
    if (on) next.add(id);
    else next.delete(id);
    this.ticked = next;
  }

  private tickAll(on: boolean): void {
    this.ticked = new Set(on ? this.items.map((i) => i.id) : []);
  }

  /** The retries typed in, or undefined for each task's configured retries. */
  private retries(name: string): number | undefined {
    const input = this.querySelector<HTMLInputElement>(`input[name="${name}"]`);
    const n = Number(input?.value);
    return input?.value && Number.isInteger(n) && n > 0 ? n : undefined;
  }

  private async retryOne(incident: IncidentItem): Promise<void> {
    try {
      const res = await api.retryIncident(incident.id, this.retries('retries-one'));
      this.notice = `Retried: instance ${shortId(incident.instanceId)} is ${res.instanceStatus}`;
      this.error = '';
      this.follow();
    } catch (err) {
      this.error = (err as ApiError).message;
    }
  }

  private async retryTicked(): Promise<void> {
    const ids = [...this.ticked];
    if (ids.length === 0) return;
    try {
      const res = await api.retryIncidents(ids, this.retries('retries-many'));
      this.notice = summarize(res.results);
      this.error = '';
      this.ticked = new Set();
      this.follow();
    } catch (err) {
      this.error = (err as ApiError).message;
    }
  }

  private renderDetails(i: IncidentItem) {
    return html`<section class="incident-details" aria-label="Incident details" data-incident-id=${i.id}>
      <h2>${i.kind} at <code>${i.stepId}</code></h2>
      <p class="meta">
        <a class="instance-link" href="#/instances/${i.instanceId}">instance <code title=${i.instanceId}>${shortId(i.instanceId)}</code></a>
        · ${i.definitionKey} v${i.version} · business key ${i.businessKey ?? '—'} · raised ${formatTime(i.createdAt)}
        · <span class="status status-${i.status}">${i.status}</span>
      </p>
      <p class="incident-message">${i.message}</p>
      ${i.errorMessage ? html`<h3>Worker error</h3><p class="error-message">${i.errorMessage}</p>` : nothing}
      ${i.errorDetails ? html`<h3>Stack trace</h3><pre class="error-details">${i.errorDetails}</pre>` : nothing}
      ${moreDetails(i) ? html`<h3>Details</h3><pre class="incident-data">${JSON.stringify(moreDetails(i), null, 2)}</pre>` : nothing}
      ${
        i.status === 'open'
          ? html`<div class="actions">
              <label>Retries <input name="retries-one" type="number" min="1" max="1000" placeholder="as configured" /></label>
              <button class="retry-one" @click=${() => this.retryOne(i)}>Retry</button>
            </div>`
          : nothing
      }
    </section>`;
  }

  private renderTable() {
    const all = this.items.length > 0 && this.items.every((i) => this.ticked.has(i.id));
    return html`<table class="data incident-list">
      <thead><tr>
        <th><input type="checkbox" aria-label="Select all" .checked=${all} @change=${(e: Event) => this.tickAll((e.target as HTMLInputElement).checked)} /></th>
        <th>Process</th><th>Step</th><th>Kind</th><th>Message</th><th>Age</th>
      </tr></thead>
      <tbody>${this.items.map(
        (
          i,
        ) => html`<tr data-incident-id=${i.id} data-instance-id=${i.instanceId} class=${this.selected?.id === i.id ? 'selected' : ''}
            @click=${() => (this.selected = i)}>
          <td @click=${(e: Event) => e.stopPropagation()}><input type="checkbox" aria-label="Select incident at ${i.stepId}"
            .checked=${this.ticked.has(i.id)} @change=${(e: Event) => this.tick(i.id, (e.target as HTMLInputElement).checked)} /></td>
          <td>${i.definitionKey} v${i.version}</td>
          <td><code>${i.stepId}</code></td>
          <td><span class="kind">${i.kind}</span></td>
          <td class="message">${i.errorMessage ?? i.message}</td>
          <td title=${formatTime(i.createdAt)}>${age(i.createdAt)}</td>
        </tr>`,
      )}</tbody>
    </table>`;
  }

  override render() {
    return html`<section class="page incidents-page">
      <div class="page-head"><h1>Incidents</h1>
        <div class="actions">
          <label>Retries <input name="retries-many" type="number" min="1" max="1000" placeholder="as configured" /></label>
          <button class="retry-selected" ?disabled=${this.ticked.size === 0} @click=${() => this.retryTicked()}>
            Retry selected (${this.ticked.size})</button>
        </div>
      </div>
      <form class="filters" @submit=${(e: Event) => this.applyFilter(e)} aria-label="Filter incidents">
        <label>Process <select name="definitionKey">
          ${['', ...new Set([...this.keys, ...(this.definitionKey ? [this.definitionKey] : [])])].map(
            (k) => html`<option value=${k} ?selected=${k === this.definitionKey}>${k || 'any'}</option>`,
          )}
        </select></label>
        <label>Kind <select name="kind">
          ${['', ...KINDS].map((k) => html`<option value=${k} ?selected=${k === this.kind}>${k || 'any'}</option>`)}
        </select></label>
        <button type="submit">Filter</button>
      </form>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${this.notice ? html`<p class="notice" role="status">${this.notice}</p>` : nothing}
      ${
        !this.loaded
          ? html`<p class="empty">Loading…</p>`
          : this.items.length === 0
            ? html`<p class="empty">No open incidents match.</p>`
            : this.renderTable()
      }
      <div class="pager">
        <button ?disabled=${this.cursors.length === 0} @click=${() => this.page('first')}>First page</button>
        <span>Page ${this.cursors.length + 1}</span>
        <button ?disabled=${!this.nextCursor} @click=${() => this.page('next')}>Next page</button>
      </div>
      ${this.selected ? this.renderDetails(this.items.find((i) => i.id === this.selected?.id) ?? this.selected) : nothing}
    </section>`;
  }
}

customElements.define('baton-incident-list', BatonIncidentList);

/** The incident's details but the worker error shown above them; undefined when nothing is left. */
function moreDetails(i: IncidentItem): Record<string, unknown> | undefined {
  const rest = Object.fromEntries(
    Object.entries(i.details ?? {}).filter(([k]) => !(i.taskId && (k === 'errorMessage' || k === 'errorDetails'))),
  );
  return Object.keys(rest).length > 0 ? rest : undefined;
}

/** "42s", "5m", "3h", "2d": how long the incident has waited. */
function age(iso: string): string {
  const s = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

function summarize(results: RetryResult[]): string {
  const failed = results.filter((r) => !r.ok);
  const done = results.length - failed.length;
  return failed.length === 0
    ? `Retried ${done} incident${done === 1 ? '' : 's'}`
    : `Retried ${done}; not retried ${failed.length}: ${failed.map((r) => `${shortId(r.id)} (${r.reason ?? 'refused'})`).join(', ')}`;
}
