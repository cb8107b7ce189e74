// Home: the diagram drafts (new, open, rename, delete, import) and the deployed definitions.
import { html, nothing } from 'lit';
import type { ApiError } from '../client/api-client.ts';
import { api } from '../client/api-client.ts';
import type { DefinitionSummary, DiagramSummary } from '../client/types.ts';
import { DIALECTS, type Dialect } from '../modeler/dialect.ts';
import { newDiagramXml } from '../modeler/new-diagram.ts';
import { formatTime, LightElement } from './light-element.ts';

export class BatonDiagramList extends LightElement {
  static override properties = {
    diagrams: { state: true },
    definitions: { state: true },
    renaming: { state: true },
    error: { state: true },
    loading: { state: true },
  };
  declare diagrams: DiagramSummary[];
  declare definitions: DefinitionSummary[];
  declare renaming: string | undefined;
  declare error: string;
  declare loading: boolean;

  constructor() {
    super();
    this.diagrams = [];
    this.definitions = [];
    this.renaming = undefined;
    this.error = '';
    this.loading = true;
  }

  override connectedCallback(): void {
    super.connectedCallback();
    void this.load();
  }

  private async load(): Promise<void> {
    try {
      [this.diagrams, this.definitions] = await Promise.all([api.listDiagrams(), api.listDefinitions()]);
      this.error = '';
    } catch (err) {
      this.error = (err as ApiError).message;
    } finally {
      this.loading = false;
    }
  }

  private async run(action: () => Promise<unknown>): Promise<void> {
    try {
      await action();
      this.error = '';
    } catch (err) {
      this.error = (err as ApiError).message;
    }
  }

  private createDiagram(): Promise<void> {
    return this.run(async () => {
      const name = `Untitled ${this.diagrams.length + 1}`;
      const dialect = (this.querySelector('#new-dialect') as HTMLSelectElement | null)?.value as Dialect | undefined;
      const created = await api.createDiagram(name, newDiagramXml(name, dialect));
      this.navigate(`#/diagrams/${created.id}`);
    });
  }

  private async importFile(e: Event): Promise<void> {
    const input = e.target as HTMLInputElement;
    const file = input.files?.[0];
    input.value = '';
    if (!file) return;
    // The server refuses XML that does not parse as BPMN (no draft is created); say which file.
    try {
      const created = await api.createDiagram(file.name.replace(/\.(bpmn|xml)$/i, '') || 'Imported', await file.text());
      this.error = '';
      this.navigate(`#/diagrams/${created.id}`);
    } catch (err) {
      this.error = `${file.name} could not be imported: ${(err as ApiError).message}`;
    }
  }

  private async rename(diagram: DiagramSummary, e: Event): Promise<void> {
    e.preventDefault();
    const input = (e.target as HTMLFormElement).elements.namedItem('name') as HTMLInputElement;
    const name = input.value.trim();
    if (!name) {
      this.error = 'A diagram needs a name';
      return;
    }
    await this.run(async () => {
      await api.renameDiagram(diagram.id, name);
      this.renaming = undefined;
      await this.load();
    });
  }

  private async deleteDiagram(diagram: DiagramSummary): Promise<void> {
    if (!confirm(`Delete the diagram "${diagram.name}"? Deployed versions stay.`)) return;
    await this.run(async () => {
      await api.deleteDiagram(diagram.id);
      await this.load();
    });
  }

  private renderDiagram(d: DiagramSummary) {
    const name =
      this.renaming === d.id
        ? html`<form class="inline-form" @submit=${(e: Event) => this.rename(d, e)}>
          <input name="name" aria-label="New name" .value=${d.name} maxlength="255" required autofocus />
          <button type="submit">Save</button>
          <button type="button" @click=${() => (this.renaming = undefined)}>Cancel</button>
        </form>`
        : html`<a href="#/diagrams/${d.id}">${d.name}</a>`;
    return html`<tr data-diagram-id=${d.id}>
      <td>${name}</td>
      <td>${formatTime(d.updatedAt)}</td>
      <td class="actions">
        <button @click=${() => this.navigate(`#/diagrams/${d.id}`)}>Open</button>
        <button @click=${() => (this.renaming = d.id)}>Rename</button>
        <button class="danger" @click=${() => this.deleteDiagram(d)}>Delete</button>
      </td>
    </tr>`;
  }

  private renderDefinitions() {
    if (this.definitions.length === 0) return html`<p class="empty">Nothing deployed yet: open a diagram and press Deploy.</p>`;
    return html`<table class="data">
      <thead><tr><th>Key</th><th>Latest version</th><th>Fingerprint</th><th>Deployed</th><th></th></tr></thead>
      <tbody>${this.definitions.map(
        (d) => html`<tr>
        <td><a href="#/definitions/${encodeURIComponent(d.key)}">${d.key}</a></td>
        <td>${d.version}</td>
        <td><code title=${d.fingerprint}>${d.fingerprint.slice(0, 12)}</code></td>
        <td>${formatTime(d.deployedAt)}</td>
        <td class="actions"><a href="#/instances?definitionKey=${encodeURIComponent(d.key)}">Instances</a></td>
      </tr>`,
      )}</tbody>
    </table>`;
  }

  override render() {
    return html`
      <section class="page">
        <div class="page-head">
          <h1>Diagrams</h1>
          <div class="actions">
            <button class="primary" @click=${() => this.createDiagram()}>New diagram</button>
            <select id="new-dialect" aria-label="Dialect of a new diagram" title="The engine attributes a new diagram is written for">
              ${Object.entries(DIALECTS).map(([value, label]) => html`<option value=${value}>${label}</option>`)}
            </select>
            <button @click=${() => (this.querySelector('#import-file') as HTMLInputElement).click()}>Import .bpmn</button>
            <input id="import-file" type="file" accept=".bpmn,.xml,application/xml,text/xml" hidden @change=${(e: Event) => this.importFile(e)} />
          </div>
        </div>
        ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
        ${
          this.loading
            ? html`<p class="empty">Loading…</p>`
            : this.diagrams.length === 0
              ? html`<p class="empty">No diagrams yet. Create one, or import a .bpmn file (Camunda Modeler files work).</p>`
              : html`<table class="data diagram-list">
              <thead><tr><th>Name</th><th>Last saved</th><th></th></tr></thead>
              <tbody>${this.diagrams.map((d) => this.renderDiagram(d))}</tbody>
            </table>`
        }
        <h2>Deployed processes</h2>
        ${this.renderDefinitions()}
      </section>
    `;
  }
}

customElements.define('baton-diagram-list', BatonDiagramList);
