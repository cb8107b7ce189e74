// An instance's variables, editable while it runs: each edit names the revision it was read
// at, so an edit on a view that changed meanwhile is refused (409) instead of overwriting.
import { html, nothing } from 'lit';
import { ApiError, api } from '../client/api-client.ts';
import type { VariablesEdit } from '../client/types.ts';
import { LightElement } from './light-element.ts';

/** What is being edited: a variable's value, or a new one; with the revision the edit began on. */
type Draft = { name: string; text: string; revision: number; adding: boolean };

export class BatonVariablesEditor extends LightElement {
  static override properties = {
    instanceId: { type: String },
    variables: { attribute: false },
    revision: { type: Number },
    editable: { type: Boolean },
    draft: { state: true },
    error: { state: true },
    stale: { state: true },
  };
  declare instanceId: string;
  declare variables: Record<string, unknown>;
  declare revision: number;
  declare editable: boolean;
  declare draft: Draft | undefined;
  declare error: string;
  /** the last edit was refused because the instance changed meanwhile */
  declare stale: boolean;

  constructor() {
    super();
    this.instanceId = '';
    this.variables = {};
    this.revision = 0;
    this.editable = false;
    this.draft = undefined;
    this.error = '';
    this.stale = false;
  }

  private begin(name: string, adding: boolean): void {
    const text = adding ? '' : JSON.stringify(this.variables[name], null, 2);
    this.draft = { name, text, revision: this.revision, adding };
    this.error = '';
    this.stale = false;
  }

  private async save(): Promise<void> {
    const draft = this.draft;
    if (!draft) return;
    const name = draft.name.trim();
    if (!name) return void (this.error = 'Name the variable');
    let value: unknown;
    try {
      value = JSON.parse(draft.text);
    } catch (err) {
      return void (this.error = `The value is not JSON: ${(err as Error).message}`);
    }
    if (draft.adding && Object.hasOwn(this.variables, name)) return void (this.error = `"${name}" exists; edit it instead`);
    await this.send({ revision: draft.revision, set: { [name]: value } });
  }

  private deleteVariable(name: string): Promise<void> {
    if (!confirm(`Delete variable "${name}"?`)) return Promise.resolve();
    return this.send({ revision: this.revision, delete: [name] });
  }

  private async send(edit: VariablesEdit): Promise<void> {
    try {
      const res = await api.editVariables(this.instanceId, edit);
      // Shown at once; the live snapshot that follows the edit agrees.
      this.variables = res.variables;
      this.revision = res.revision;
      this.draft = undefined;
      this.error = '';
      this.stale = false;
    } catch (err) {
      const e = err as ApiError;
      this.stale =
        e instanceof ApiError && e.status === 409 && typeof (e.details as { revision?: unknown })?.revision === 'number';
      this.error = this.stale ? 'The instance changed meanwhile; reload its variables and edit again.' : e.message;
    }
  }

  /** Drops the draft: the view shows the variables as the latest snapshot has them. */
  private reload(): void {
    this.draft = undefined;
    this.stale = false;
    this.error = '';
    this.dispatchEvent(new CustomEvent('baton-reload', { bubbles: true }));
  }

  private renderDraft(d: Draft) {
    return html`<form class="variable-draft" aria-label=${d.adding ? 'New variable' : `Edit ${d.name}`}
        @submit=${(e: Event) => (e.preventDefault(), void this.save())}>
      ${
        d.adding
          ? html`<label>Name <input name="name" .value=${d.name} @input=${(e: Event) => (this.draft = { ...d, name: (e.target as HTMLInputElement).value })} /></label>`
          : html`<strong>${d.name}</strong>`
      }
      <label>Value (JSON) <textarea name="value" rows="4" .value=${d.text}
        @input=${(e: Event) => (this.draft = { ...d, text: (e.target as HTMLTextAreaElement).value })}></textarea></label>
      <div class="actions">
        <button type="submit" class="save-variable">Save</button>
        <button type="button" @click=${() => (this.draft = undefined)}>Discard</button>
      </div>
    </form>`;
  }

  override render() {
    const names = Object.keys(this.variables).sort();
    return html`
      ${
        this.error
          ? html`<p class="error variables-error" role="alert" data-stale=${this.stale}>${this.error}
              ${this.stale ? html`<button class="reload-variables" @click=${() => this.reload()}>Reload</button>` : nothing}</p>`
          : nothing
      }
      ${
        names.length === 0
          ? html`<p class="empty">No variables.</p>`
          : html`<table class="data variables" data-revision=${this.revision}>
        <thead><tr><th>Name</th><th>Value</th>${this.editable ? html`<th></th>` : nothing}</tr></thead>
        <tbody>${names.map(
          (name) => html`<tr data-variable=${name}>
            <td><code>${name}</code></td>
            <td><pre class="value">${JSON.stringify(this.variables[name])}</pre></td>
            ${
              this.editable
                ? html`<td class="actions"><button class="edit-variable" @click=${() => this.begin(name, false)}>Edit</button>
                    <button class="delete-variable danger" @click=${() => this.deleteVariable(name)}>Delete</button></td>`
                : nothing
            }
          </tr>`,
        )}</tbody></table>`
      }
      ${this.draft ? this.renderDraft(this.draft) : nothing}
      ${this.editable && !this.draft ? html`<button class="add-variable" @click=${() => this.begin('', true)}>Add variable</button>` : nothing}
    `;
  }
}

customElements.define('baton-variables-editor', BatonVariablesEditor);
