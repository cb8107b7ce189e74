// Lists the compiler's diagnostics; choosing one asks the editor to select its element.
import { html, nothing } from 'lit';
import type { Diagnostic } from '../client/types.ts';
import { LightElement } from './light-element.ts';

export class BatonProblemsPanel extends LightElement {
  static override properties = {
    problems: { attribute: false },
    checking: { type: Boolean },
    ok: { attribute: false },
  };
  declare problems: Diagnostic[];
  declare checking: boolean;
  declare ok: boolean | null;

  constructor() {
    super();
    this.problems = [];
    this.checking = false;
    this.ok = null;
  }

  override render() {
    const errors = this.problems.filter((p) => p.severity === 'error').length;
    const summary =
      this.ok === null
        ? 'Not checked yet'
        : errors
          ? `${errors} error(s): the diagram does not compile`
          : this.problems.length
            ? `Compiles, with ${this.problems.length} warning(s)`
            : 'No problems: the diagram compiles';
    return html`
      <section class="problems" aria-label="Problems">
        <h2>Problems <span class="problems-summary ${errors ? 'bad' : 'good'}">${summary}</span>
          ${this.checking ? html`<span class="checking">checking…</span>` : nothing}</h2>
        <ul>
          ${this.problems.map(
            (p) => html`<li>
            <button class="problem problem-${p.severity}" data-element-id=${p.elementId}
              @click=${() => this.emit('baton-select-element', { elementId: p.elementId })}>
              <span class="severity">${p.severity}</span> <code>${p.elementId}</code> ${p.message}
            </button>
          </li>`,
          )}
        </ul>
      </section>
    `;
  }
}

customElements.define('baton-problems-panel', BatonProblemsPanel);
