// One renderer for both kinds of task form: camunda:formData fields become a form-js schema
// (the Camunda Forms JSON that zeebe:userTaskForm embeds), so form-js draws and validates both.
import type { UserTaskForm, UserTaskFormField } from '../client/types.ts';

/** A form-js component as the designer writes or reads it; form-js accepts more. */
export interface FormComponent {
  type: string;
  key?: string;
  id?: string;
  label?: string;
  [property: string]: unknown;
}

export interface FormSchema {
  type: 'default';
  id?: string;
  components: FormComponent[];
  [property: string]: unknown;
}

/** The schema form-js renders for a task, or undefined when the task has no form Baton can draw. */
export function formSchemaOf(form: UserTaskForm, taskId: string): FormSchema | undefined {
  if (isFormSchema(form.schema)) return form.schema;
  if (form.fields && form.fields.length > 0) return schemaOfFields(form.fields, taskId);
  return undefined;
}

function isFormSchema(schema: unknown): schema is FormSchema {
  return typeof schema === 'object' && schema !== null && Array.isArray((schema as { components?: unknown }).components);
}

export function schemaOfFields(fields: UserTaskFormField[], taskId: string): FormSchema {
  return { type: 'default', id: `form-data-${taskId}`, components: fields.map(componentOf) };
}

/**
 * The checks match the server's (runtime/engine/user-task-details.ts): a boolean is a checkbox,
 * whose value is always true or false, so `required` there asks for nothing more (form-js's
 * required checkbox would demand true).
 */
function componentOf(field: UserTaskFormField): FormComponent {
  const rules = new Map(field.constraints.map((c) => [c.name, c.config]));
  const number = (name: UserTaskFormField['constraints'][number]['name']) => {
    const n = Number(rules.get(name));
    return rules.has(name) && Number.isFinite(n) ? n : undefined;
  };
  const label = field.label ?? field.id;
  const base = {
    id: `field_${field.id}`,
    key: field.id,
    ...(rules.has('readonly') ? { readonly: true } : {}),
  };
  const required = rules.has('required') ? { required: true } : {};
  switch (field.type) {
    case 'long':
      return {
        ...base,
        type: 'number',
        label,
        decimalDigits: 0,
        ...defaultOf(field.defaultValue === undefined ? undefined : Number(field.defaultValue)),
        validate: { ...required, ...defined('min', number('min')), ...defined('max', number('max')) },
      };
    case 'boolean':
      return { ...base, type: 'checkbox', label, defaultValue: field.defaultValue === 'true' };
    case 'enum':
      return {
        ...base,
        type: 'select',
        label,
        values: (field.values ?? []).map((v) => ({ label: v.name || v.id, value: v.id })),
        ...defaultOf(field.defaultValue),
        validate: required,
      };
    case 'date':
      return { ...base, type: 'datetime', subtype: 'date', dateLabel: label, validate: required };
    case 'string':
      return {
        ...base,
        type: 'textfield',
        label,
        ...defaultOf(field.defaultValue),
        validate: { ...required, ...defined('minLength', number('minlength')), ...defined('maxLength', number('maxlength')) },
      };
  }
}

function defaultOf(value: unknown): { defaultValue?: unknown } {
  return value === undefined || (typeof value === 'number' && Number.isNaN(value)) ? {} : { defaultValue: value };
}

function defined(name: string, value: number | undefined): Record<string, number> {
  return value === undefined ? {} : { [name]: value };
}

/**
 * The variables a completion sends: what form-js submitted, without the fields left empty (null
 * or undefined), so an empty optional field keeps the instance's value instead of clearing it.
 */
export function variablesOf(data: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined && v !== null));
}
