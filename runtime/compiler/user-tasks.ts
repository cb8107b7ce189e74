// User tasks: a person, not a worker, completes them. Both dialects compile to one UserTaskSpec:
// Camunda 7's attributes (camunda:assignee, candidateUsers, candidateGroups, dueDate, followUpDate,
// priority, formKey) with camunda:formData, and Zeebe's zeebe:assignmentDefinition,
// zeebe:taskSchedule, zeebe:priorityDefinition and zeebe:formDefinition (an embedded Camunda Form
// through zeebe:userTaskForm). The step waits as a catch event does: the wait is the task.
import { checkFeel, toFeel } from '../shared/feel.ts';
import { errorAt, warningAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import { describeElement, type BpmnElement } from './model.ts';
import type { Diagnostic, FormFieldSpec, UserTaskSpec, UserTaskValue, WaitSpec } from './plan.ts';

interface GenericElement {
  $type: string;
  $body?: string;
  $children?: GenericElement[];
  [attribute: string]: unknown;
}

interface CamundaFormField {
  id?: string;
  label?: string;
  type?: string;
  datePattern?: string;
  defaultValue?: string;
  validation?: { constraints?: { name?: string; config?: string }[] };
  values?: { id?: string; name?: string }[];
}

const FIELD_TYPES = ['string', 'long', 'boolean', 'date', 'enum'] as const;
const CONSTRAINTS = ['required', 'minlength', 'maxlength', 'min', 'max', 'readonly'] as const;

export function readUserTasks(
  graph: ProcessGraph,
  process: BpmnElement,
): { waits: Map<string, WaitSpec>; diagnostics: Diagnostic[] } {
  const waits = new Map<string, WaitSpec>();
  const diagnostics: Diagnostic[] = [];
  const embedded = embeddedForms(process);
  for (const node of graph.nodes.values()) {
    if (node.element.$type !== 'bpmn:UserTask') continue;
    const problems: string[] = [];
    const warnings: string[] = [];
    const spec = readSpec(node.element, embedded, problems, warnings);
    const label = describeElement(node.element);
    for (const p of problems) diagnostics.push(errorAt(node.id, `User task ${label}: ${p}`));
    for (const w of warnings) diagnostics.push(warningAt(node.id, `User task ${label}: ${w}`));
    if (problems.length === 0) waits.set(node.id, { trigger: 'user', userTask: spec });
  }
  return { waits, diagnostics };
}

function readSpec(element: BpmnElement, embedded: Map<string, string>, problems: string[], warnings: string[]): UserTaskSpec {
  const own = element as BpmnElement & Record<string, unknown>;
  const values = extensionValues(element);
  const zeebe = (type: string) => values.find((v) => v.$type === type);
  const assignment = zeebe('zeebe:assignmentDefinition');
  const schedule = zeebe('zeebe:taskSchedule');
  const priority = zeebe('zeebe:priorityDefinition');
  const spec: UserTaskSpec = {};
  const read = (key: keyof UserTaskSpec & string, c7: unknown, z: unknown) => {
    const source = text(c7) ?? text(z);
    if (source === undefined) return;
    const value = readValue(source, key, problems);
    if (value) (spec as Record<string, UserTaskValue>)[key] = value;
  };
  read('assignee', own.assignee, assignment?.assignee);
  read('candidateUsers', own.candidateUsers, assignment?.candidateUsers);
  read('candidateGroups', own.candidateGroups, assignment?.candidateGroups);
  read('dueDate', own.dueDate, schedule?.dueDate);
  read('followUpDate', own.followUpDate, schedule?.followUpDate);
  read('priority', own.priority, priority?.priority);

  const formData = values.find((v) => v.$type === 'camunda:FormData') as { fields?: CamundaFormField[] } | undefined;
  if (formData) spec.formFields = (formData.fields ?? []).flatMap((f) => readField(f, problems));
  const formKey = text(own.formKey);
  const definition = zeebe('zeebe:formDefinition');
  const zeebeKey = text(definition?.formKey);
  const embeddedId = (formKey ?? zeebeKey)?.match(/^camunda-forms:bpmn:(.+)$/)?.[1];
  if (embeddedId !== undefined) {
    const body = embedded.get(embeddedId);
    if (body === undefined)
      problems.push(`its form key names zeebe:userTaskForm "${embeddedId}", which the process does not hold`);
    else {
      try {
        spec.formSchema = JSON.parse(body) as unknown;
      } catch (err) {
        problems.push(`the embedded form "${embeddedId}" is not JSON: ${(err as Error).message}`);
      }
    }
  } else if (formKey ?? zeebeKey ?? text(definition?.externalReference)) {
    spec.formKey = (formKey ?? zeebeKey ?? text(definition?.externalReference))!;
  }
  if (text(definition?.formId) !== undefined)
    warnings.push(
      `its form is linked by formId "${text(definition?.formId)}": Baton keeps no deployed forms, so the task has no form; embed the form (zeebe:userTaskForm) or describe it with camunda:formData`,
    );
  if (text(own.formRef) !== undefined)
    warnings.push(
      `camunda:formRef "${text(own.formRef)}" names a deployed form Baton does not keep, so the task has no form; describe it with camunda:formData`,
    );
  if (values.some((v) => v.$type === 'camunda:TaskListener' || v.$type === 'zeebe:taskListeners'))
    problems.push('task listeners are not run: remove them, or put the work in a service task before or after the user task');
  // Multi-instance markers are read with the other multi-instance elements (multi-instance.ts).
  const marker = (element as BpmnElement & { loopCharacteristics?: BpmnElement }).loopCharacteristics;
  if (marker && marker.$type !== 'bpmn:MultiInstanceLoopCharacteristics')
    problems.push('a user task cannot loop: draw a sequence flow back to it, or make it multi-instance');
  return spec;
}

function readValue(source: string, what: string, problems: string[]): UserTaskValue | undefined {
  if (!source.startsWith('=') && !source.startsWith('${') && !source.startsWith('#{')) return { text: source };
  const feel = toFeel(source);
  const problem = feel.ok ? checkFeel(feel.feel) : feel.message;
  if (!feel.ok || problem !== undefined) {
    problems.push(`${what} "${source}" is not a valid expression: ${problem ?? ''}`);
    return undefined;
  }
  return { feel: feel.feel, source };
}

function readField(field: CamundaFormField, problems: string[]): FormFieldSpec[] {
  const id = field.id?.trim();
  if (!id) {
    problems.push('a camunda:formField has no id: give each field the variable name it sets');
    return [];
  }
  const type = (field.type ?? 'string') as FormFieldSpec['type'];
  if (!FIELD_TYPES.includes(type)) {
    problems.push(`form field "${id}" has type "${field.type}": Baton validates ${FIELD_TYPES.join(', ')}`);
    return [];
  }
  const constraints: FormFieldSpec['constraints'] = [];
  for (const c of field.validation?.constraints ?? []) {
    const name = c.name as (typeof CONSTRAINTS)[number];
    if (!CONSTRAINTS.includes(name)) {
      problems.push(
        `form field "${id}" has constraint "${c.name}": Baton checks ${CONSTRAINTS.join(', ')} (custom validators are Java)`,
      );
      continue;
    }
    if (['minlength', 'maxlength', 'min', 'max'].includes(name) && !Number.isFinite(Number(c.config))) {
      problems.push(`form field "${id}": constraint ${name} needs a number, got "${c.config ?? ''}"`);
      continue;
    }
    constraints.push({ name, ...(c.config !== undefined ? { config: c.config } : {}) });
  }
  return [
    {
      id,
      type,
      ...(field.label ? { label: field.label } : {}),
      ...(field.defaultValue !== undefined ? { defaultValue: field.defaultValue } : {}),
      ...(type === 'enum' ? { values: (field.values ?? []).map((v) => ({ id: v.id ?? '', name: v.name ?? v.id ?? '' })) } : {}),
      constraints,
    },
  ];
}

/** zeebe:userTaskForm bodies of the process, by id. */
function embeddedForms(process: BpmnElement): Map<string, string> {
  const forms = new Map<string, string>();
  for (const v of extensionValues(process)) {
    if (v.$type === 'zeebe:userTaskForm' && typeof v.id === 'string') forms.set(v.id, v.$body ?? '');
  }
  return forms;
}

function extensionValues(element: BpmnElement): GenericElement[] {
  return ((element as BpmnElement & { extensionElements?: { values?: GenericElement[] } }).extensionElements?.values ??
    []) as GenericElement[];
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}
