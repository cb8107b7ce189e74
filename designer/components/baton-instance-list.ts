// Instances, newest first: filter by definition, status and business key; paged by cursor.
import { html, nothing } from 'lit';
import type { ApiError } from '../client/api-client.ts';
import { api } from '../client/api-client.ts';
import { pollEvery } from '../client/live.ts';
import type { InstanceFilter, InstanceSummary } from '../client/types.ts';
import { formatTime, LightElement, shortId } from './light-element.ts';

const PAGE_SIZE = 20;

export class BatonInstanceList extends LightElement {
  static override properties = {
    definitionKey: { type: String },
    status: { type: String },
    businessKey: { state: true },
    items: { state: true },
    nextCursor: { state: true },
    cursors: { state: true },
    error: { state: true },
    loaded: { state: true },
    keys: { state: true },
  };
  declare definitionKey: string;
  declare status: string;
  declare businessKey: string;
  declare items: InstanceSummary[];
  declare nextCursor: string | null;
  /** cursors of the pages before the current one; the last is the current page's */
  declare cursors: string[];
  declare error: string;
  declare loaded: boolean;
  /** deployed definition keys, for the filter */
  declare keys: string[];
  private stop: (() => void) | undefined;

  constructor() {
    super();
    this.definitionKey = '';
    this.status = '';
    this.businessKey = '';
    this.items = [];
    this.nextCursor = null;
    this.cursors = [];
    this.error = '';
    this.loaded = false;
    this.keys = [];
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.follow();
    api.listDefinitions().then(
      (defs) => (this.keys = defs.map((d) => d.key)),
      () => undefined,
    );
  }

  override disconnectedCallback(): void {
    this.stop?.();
    super.disconnectedCallback();
  }

  private filter(): InstanceFilter {
    const cursor = this.cursors[this.cursors.length - 1];
    return {
      definitionKey: this.definitionKey || undefined,
      status: (this.status || undefined) as InstanceFilter['status'],
      businessKey: this.businessKey || undefined,
      limit: PAGE_SIZE,
      ...(cursor ? { cursor } : {}),
    };
  }

  /** (Re)starts following the current page; it refreshes every poll so statuses move live. */
  private follow(): void {
    this.stop?.();
    const filter = this.filter();
    this.stop = pollEvery(
      () => api.listInstances(filter),
      (page) => {
        this.items = page.items;
        this.nextCursor = page.nextCursor;
        this.error = '';
        this.loaded = true;
      },
      (err: ApiError) => (this.error = err.message),
    );
  }

  private applyFilter(e: Event): void {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const value = (name: string) => ((form.elements.namedItem(name) as HTMLInputElement).value ?? '').trim();
    this.definitionKey = value('definitionKey');
    this.status = value('status');
    this.businessKey = value('businessKey');
    this.cursors = [];
    this.follow();
  }

  private page(direction: 'next' | 'first'): void {
    this.cursors = direction === 'next' && this.nextCursor ? [...this.cursors, this.nextCursor] : [];
    this.follow();
  }

  override render() {
    return html`<section class="page">
      <div class="page-head"><h1>Instances</h1></div>
      <form class="filters" @submit=${(e: Event) => this.applyFilter(e)} aria-label="Filter instances">
        <label>Definition <select name="definitionKey">
          ${['', ...new Set([...this.keys, ...(this.definitionKey ? [this.definitionKey] : [])])].map(
            (k) => html`<option value=${k} ?selected=${k === this.definitionKey}>${k || 'any'}</option>`,
          )}
        </select></label>
        <label>Status <select name="status" .value=${this.status}>
          ${['', 'running', 'incident', 'completed', 'canceled'].map((s) => html`<option value=${s} ?selected=${s === this.status}>${s || 'any'}</option>`)}
        </select></label>
        <label>Business key <input name="businessKey" .value=${this.businessKey} placeholder="any" /></label>
        <button type="submit">Filter</button>
      </form>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${
        !this.loaded
          ? html`<p class="empty">Loading…</p>`
          : this.items.length === 0
            ? html`<p class="empty">No instances match. Start one from a deployed diagram.</p>`
            : html`<table class="data instance-list">
            <thead><tr><th>Instance</th><th>Definition</th><th>Business key</th><th>Status</th><th>Started</th><th>Ended</th></tr></thead>
            <tbody>${this.items.map(
              (i) => html`<tr data-instance-id=${i.id}>
              <td><a href="#/instances/${i.id}"><code title=${i.id}>${shortId(i.id)}</code></a></td>
              <td><a href="#/definitions/${encodeURIComponent(i.definitionKey)}?version=${i.version}">${i.definitionKey} v${i.version}</a></td>
              <td>${i.businessKey ?? '—'}</td>
              <td><span class="status status-${i.status}">${i.status}</span>${i.suspended ? html` <span class="status status-suspended">suspended</span>` : nothing}</td>
              <td>${formatTime(i.createdAt)}</td>
              <td>${formatTime(i.endedAt)}</td>
            </tr>`,
            )}</tbody>
          </table>`
      }
      <div class="pager">
        <button ?disabled=${this.cursors.length === 0} @click=${() => this.page('first')}>First page</button>
        <span>Page ${this.cursors.length + 1}</span>
        <button ?disabled=${!this.nextCursor} @click=${() => this.page('next')}>Next page</button>
      </div>
    </section>`;
  }
}

customElements.define('baton-instance-list', BatonInstanceList);
