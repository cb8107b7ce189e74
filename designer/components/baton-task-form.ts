// A user task's form, drawn by form-js (the viewer of Camunda Forms). form-js checks each field as
// it is filled and on submit; the server's refusals (400 details.fields) are put next to their
// fields the same way, so both kinds of error read alike.
import type { Form } from '@bpmn-io/form-js';
import { html } from 'lit';
import type { FormProblem } from '../client/types.ts';
import { variablesOf, type FormSchema } from '../forms/form-schema.ts';
import { LightElement } from './light-element.ts';

export type ReadFormResult = { ok: true; variables: Record<string, unknown> } | { ok: false };

interface FormField {
  id: string;
  key?: string;
}

export class BatonTaskForm extends LightElement {
  static override properties = { schema: { attribute: false }, data: { attribute: false }, readOnly: { type: Boolean } };
  declare schema: FormSchema | undefined;
  /** the variables the task sees: each field starts from the one its key names, as in Camunda's tasklist */
  declare data: Record<string, unknown>;
  /** true while the signed-in person does not hold the task: the fields show, nothing can be typed */
  declare readOnly: boolean;
  private form: Form | undefined;

  constructor() {
    super();
    this.schema = undefined;
    this.data = {};
    this.readOnly = true;
  }

  // form-js (with its FEEL engine, date picker and markdown) loads with the first task view, as a
  // chunk of its own: 409 kB (131 kB gzipped) the editor's bundle does not carry.
  override async firstUpdated(): Promise<void> {
    const { Form } = await import('@bpmn-io/form-js');
    if (!this.isConnected) return;
    this.form = new Form({ container: this.querySelector('.task-form-body') as HTMLElement });
    if (this.schema) await this.form.importSchema(this.schema, this.data);
    this.form.setProperty('readOnly', this.readOnly);
    // After the import: a message about the fields is out of date once the person edits them.
    this.form.on('changed', () => this.emit('baton-form-change'));
  }

  override updated(changed: Map<string, unknown>): void {
    if (changed.has('readOnly')) this.form?.setProperty('readOnly', this.readOnly);
  }

  override disconnectedCallback(): void {
    this.form?.destroy();
    super.disconnectedCallback();
  }

  /** The variables to complete with; { ok: false } when form-js found errors (it shows them at their fields). */
  read(): ReadFormResult {
    if (!this.form) return { ok: false };
    const { data, errors } = this.form.submit();
    return Object.keys(errors).length > 0 ? { ok: false } : { ok: true, variables: variablesOf(data as Record<string, unknown>) };
  }

  /** Shows the server's problems at their fields; returns those naming no field of the form. */
  showProblems(problems: readonly FormProblem[]): FormProblem[] {
    if (!this.form) return [...problems];
    const fields = this.form.get<{ getAll(): FormField[] }>('formFieldRegistry').getAll();
    const errors: Record<string, string[]> = { ...(this.form._getState().errors as Record<string, string[]>) };
    const unplaced: FormProblem[] = [];
    for (const p of problems) {
      const field = fields.find((f) => f.key === p.field);
      if (field) errors[field.id] = [...(errors[field.id] ?? []), p.message];
      else unplaced.push(p);
    }
    this.form._setState({ errors });
    return unplaced;
  }

  override render() {
    return html`<div class="task-form-body"></div>`;
  }
}

customElements.define('baton-task-form', BatonTaskForm);
