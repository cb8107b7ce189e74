// Lists the compiler's diagnostics; choosing one asks the editor to select its element.
import { html, nothing } from 'lit';
import type { Diagnostic } from '../client/types.ts';
import type { ExplainedProblem } from '../modeler/lint/problem-fixes.ts';
import { LightElement } from './light-element.ts';

export class BatonProblemsPanel extends LightElement {
  static override properties = {
    problems: { attribute: false },
    checking: { type: Boolean },
    ok: { attribute: false },
    explain: { attribute: false },
  };
  declare problems: Diagnostic[];
  declare checking: boolean;
  declare ok: boolean | null;
  /** the problem in the analyst's words, with a one-click fix where there is one */
  declare explain: ((problem: Diagnostic) => ExplainedProblem) | undefined;

  constructor() {
    super();
    this.problems = [];
    this.checking = false;
    this.ok = null;
    this.explain = undefined;
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
          ${this.problems.map((p) => {
            const said = this.explain?.(p) ?? { subject: p.elementId, text: p.message };
            return html`<li class="problem-row">
              <button class="problem problem-${p.severity}" data-element-id=${p.elementId} title=${p.message}
                @click=${() => this.emit('baton-select-element', { elementId: p.elementId })}>
                <span class="severity">${p.severity}</span> <strong class="subject">${said.subject}</strong> ${said.text}
              </button>
              ${said.fix ? html`<button class="problem-fix" data-element-id=${p.elementId} @click=${() => said.fix?.apply()}>${said.fix.label}</button>` : nothing}
            </li>`;
          })}
        </ul>
      </section>
    `;
  }
}

customElements.define('baton-problems-panel', BatonProblemsPanel);
