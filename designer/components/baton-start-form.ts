// Starts an instance: business key and variables as JSON, checked before sending.
import { html, nothing } from 'lit';
import type { ApiError } from '../client/api-client.ts';
import { api } from '../client/api-client.ts';
import type { InstanceSummary } from '../client/types.ts';
import { LightElement, shortId } from './light-element.ts';

/** Parses the variables text; an error message when it is not one JSON object. */
export function parseVariables(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  if (!text.trim()) return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, message: `Variables are not valid JSON: ${(err as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, message: 'Variables must be a JSON object, like {"total": 120}' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

export class BatonStartForm extends LightElement {
  static override properties = {
    definitionKey: { type: String },
    error: { state: true },
    started: { state: true },
  };
  declare definitionKey: string;
  declare error: string;
  declare started: InstanceSummary | undefined;

  constructor() {
    super();
    this.definitionKey = '';
    this.error = '';
    this.started = undefined;
  }

  private async submit(e: Event): Promise<void> {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const businessKey = (form.elements.namedItem('businessKey') as HTMLInputElement).value.trim();
    const variables = parseVariables((form.elements.namedItem('variables') as HTMLTextAreaElement).value);
    this.started = undefined;
    if (!variables.ok) {
      this.error = variables.message;
      return;
    }
    try {
      this.started = await api.startInstance({
        definitionKey: this.definitionKey,
        ...(businessKey ? { businessKey } : {}),
        variables: variables.value,
      });
      this.error = '';
      this.emit('baton-started', this.started);
    } catch (err) {
      this.error = (err as ApiError).message;
    }
  }

  override render() {
    return html`<form class="start-form" @submit=${(e: Event) => this.submit(e)} aria-label="Start an instance">
      <h2>Start <code>${this.definitionKey}</code></h2>
      <label for="start-business-key">Business key</label>
      <input id="start-business-key" name="businessKey" maxlength="255" placeholder="optional, e.g. order-42" />
      <label for="start-variables">Variables (JSON object)</label>
      <textarea id="start-variables" name="variables" rows="4" spellcheck="false">{}</textarea>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      <button class="primary" type="submit">Start instance</button>
      ${
        this.started
          ? html`<p class="started" role="status">Started
        <a href="#/instances/${this.started.id}">${this.started.businessKey ?? shortId(this.started.id)}</a> (${this.started.status})</p>`
          : nothing
      }
    </form>`;
  }
}

customElements.define('baton-start-form', BatonStartForm);
