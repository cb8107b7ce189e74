// Engine settings a diagram carries that Baton does not run. Camunda Modeler and the designer's
// properties panel offer them for both dialects; Baton deploys such a diagram but says, per
// element, what it will not do, so nothing the analyst set is dropped in silence.
import { warningAt } from './diagnostics.ts';
import { IO_MAPPING_TYPES } from './io-mappings.ts';
import { describeElement, type BpmnDefinitions, type BpmnElement } from './model.ts';
import type { Diagnostic } from './plan.ts';

/** Extension elements by moddle type (camunda's typed, zeebe's generic), and what to tell. */
const UNRUN_ELEMENTS: Record<string, string> = {
  'camunda:InputOutput':
    'input/output mappings (Inputs, Outputs) are not run on this element (Baton runs them on tasks, subprocesses, call activities, start and end events, none and signal throw events and catch events, and the outputs of boundary events and event subprocess starts): its variables are read and written as they are',
  'zeebe:ioMapping':
    'input/output mappings (Input mapping, Output mapping) are not run on this element (Baton runs them on tasks, subprocesses, call activities, start and end events, none and signal throw events and catch events, and the outputs of boundary events and event subprocess starts): its variables are read and written as they are',
  'camunda:TaskListener': 'task listeners are not run',
  'zeebe:taskListeners': 'task listeners are not run',
  'camunda:Field': 'field injections configure Java delegates, which Baton does not run',
  'camunda:Connector': 'connectors are not run: use an external task with a topic',
  'camunda:FailedJobRetryTimeCycle': 'the retry time cycle is not read: set Retries in the Baton group (baton:retries)',
  'camunda:ErrorEventDefinition':
    'error event definitions of an external task are not evaluated: a worker reports a BPMN error with bpmn-error',
  'zeebe:taskHeaders': 'task headers are not sent anywhere (Baton hands them to the workers of external tasks only)',
  'camunda:Properties': 'extension properties are not read here (Baton hands them to the workers of external tasks only)',
  'zeebe:priorityDefinition': 'the job priority is not read',
  'zeebe:subscription':
    'the subscription correlation key is not read: only intermediate catch events, receive tasks, boundary events and event subprocess starts read it (a message start event starts an instance whatever the key)',
};

/** Attributes camunda-bpmn-moddle reads into properties, and what to tell. */
const UNRUN_ATTRIBUTES: Record<string, string> = {
  jobPriority: 'the job priority (camunda:jobPriority) is not read: set the task priority',
  initiator: 'the initiator variable (camunda:initiator) is not set',
  formKey: 'the form key (camunda:formKey) is not shown: the designer draws its start form from the variables',
  candidateStarterGroups: 'candidate starter groups are not checked: tokens and roles decide who starts',
  candidateStarterUsers: 'candidate starter users are not checked: tokens and roles decide who starts',
  historyTimeToLive: 'the history time to live is not read: Baton keeps history for BATON_RETENTION_DAYS',
};

const USER_TASK_READS = ['zeebe:priorityDefinition', 'camunda:TaskListener', 'zeebe:taskListeners'];

interface WithSettings extends BpmnElement {
  readonly extensionElements?: { values?: BpmnElement[] };
  readonly flowElements?: BpmnElement[];
  get?(name: string): unknown;
}

/** What the plan carries, by element id: those settings are run, not warned about. */
export interface CarriedSettings {
  /** the steps whose input/output mappings run (compiler/io-mappings.ts, call activities); anywhere else they are warned about */
  mappings?: ReadonlySet<string>;
  /** the external tasks whose headers and properties reach their workers */
  headers?: ReadonlySet<string>;
  /** the messages whose zeebe:subscription correlation key the catching events read */
  subscriptions?: ReadonlySet<string>;
  /** subprocesses that run in child instances: their elements are checked with their body (compiler/subprocess-bodies.ts) */
  bodies?: ReadonlySet<string>;
  /** false for a body: the file's messages are checked with its process, which knows every element that reads them */
  messages?: boolean;
}

/** Over the process deployed and the messages of the file (a zeebe:subscription sits on the message). */
export function checkUnrunSettings(
  process: BpmnElement,
  definitions: BpmnDefinitions,
  carried: CarriedSettings = {},
): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  const visit = (element: WithSettings): void => {
    const told = new Set<string>();
    const has = (set: ReadonlySet<string> | undefined) => element.id !== undefined && set?.has(element.id) === true;
    for (const value of element.extensionElements?.values ?? []) {
      if (has(carried.mappings) && (IO_MAPPING_TYPES as readonly string[]).includes(value.$type)) continue;
      if (has(carried.headers) && (value.$type === 'zeebe:taskHeaders' || value.$type === 'camunda:Properties')) continue;
      if (has(carried.subscriptions) && value.$type === 'zeebe:subscription') continue;
      // Job listeners run as steps where they fit and are refused elsewhere (compiler/listeners.ts).
      if (value.$type === 'zeebe:executionListeners') continue;
      // A user task reads its priority; its task listeners are refused (compiler/user-tasks.ts).
      if (element.$type === 'bpmn:UserTask' && USER_TASK_READS.includes(value.$type)) continue;
      // Properties on the process are metadata for tools that read the model, in Camunda 7 too.
      if (element === process && value.$type === 'camunda:Properties') continue;
      const text = UNRUN_ELEMENTS[value.$type];
      if (text) told.add(text);
    }
    for (const [attribute, text] of Object.entries(UNRUN_ATTRIBUTES)) {
      if (element.$type === 'bpmn:UserTask' && attribute === 'formKey') continue; // handed to the tasklist
      const value = element.get?.(`camunda:${attribute}`);
      if (value !== undefined && value !== null && value !== '') told.add(text);
    }
    for (const text of told) diagnostics.push(warningAt(element.id ?? 'definitions', `${describeElement(element)}: ${text}`));
    // A body's elements are checked with it; an event subprocess's start event waits here, and is checked here.
    const children = (element.flowElements ?? []) as WithSettings[];
    for (const child of has(carried.bodies) ? children.filter((c) => isEventStart(element, c)) : children) visit(child);
  };
  visit(process as WithSettings);
  if (carried.messages !== false)
    for (const root of definitions.rootElements ?? []) if (root.$type === 'bpmn:Message') visit(root as WithSettings);
  return diagnostics;
}

function isEventStart(container: WithSettings, element: WithSettings): boolean {
  return (container as { triggeredByEvent?: boolean }).triggeredByEvent === true && element.$type === 'bpmn:StartEvent';
}
