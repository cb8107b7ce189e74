// Input and output mappings of tasks, subprocesses and the events that run them -> IoSpec
// (docs/scopes.md, "Input and output mappings"). Camunda 7 files say <camunda:inputOutput> with inputParameter/outputParameter (text,
// ${...}, camunda:list, camunda:map); Camunda 8 files say <zeebe:ioMapping> with input/output
// (source: FEEL after "=", else a literal string; target: a name or a dotted path). Every value
// becomes one FEEL expression, except a parameter that is a JavaScript camunda:script: the
// engine's script sandbox runs that one.
import { checkFeel, toFeel } from '../shared/feel.ts';
import { needsThread } from '../shared/feel-budget.ts';
import { errorAt, warningAt } from './diagnostics.ts';
import type { GraphNode, ProcessGraph } from './graph.ts';
import { describeElement, type BpmnElement } from './model.ts';
import type { Diagnostic, IoMapping, IoSpec, ScriptMapping } from './plan.ts';
import { isJavaScript, javaScriptSyntax } from './scripts.ts';
import { runsInBodies } from './subprocess-bodies.ts';

/** The extension elements that carry mappings, in camunda-bpmn-moddle's typed and generic (zeebe) form. */
export const IO_MAPPING_TYPES = ['camunda:InputOutput', 'zeebe:ioMapping'] as const;

const WHAT: Record<string, string> = {
  serviceTask: 'Service task',
  scriptTask: 'Script task',
  subProcess: 'Subprocess',
  callActivity: 'Multi-instance subprocess',
  eventSubProcess: 'Event subprocess',
  'bpmn:UserTask': 'User task',
  'bpmn:ReceiveTask': 'Receive task',
  catchEvent: 'Catch event',
  boundaryEvent: 'Boundary event',
  startEvent: 'Start event',
  eventSubProcessStart: 'Start event',
  endEvent: 'End event',
  signalThrow: 'Signal event',
  'bpmn:Task': 'Task',
  'bpmn:ManualTask': 'Manual task',
  'bpmn:IntermediateThrowEvent': 'Intermediate throw event',
  'bpmn:IntermediateCatchEvent': 'Link event',
};

const SEGMENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface CamundaValue extends BpmnElement {
  readonly name?: string;
  readonly key?: string;
  readonly value?: string;
  readonly scriptFormat?: string;
  readonly definition?: CamundaValue;
  readonly items?: CamundaValue[];
  readonly entries?: CamundaValue[];
}

interface MappingHolder extends BpmnElement {
  readonly inputParameters?: CamundaValue[];
  readonly outputParameters?: CamundaValue[];
  readonly $children?: { $type: string; source?: string; target?: string }[];
}

/**
 * Mappings of every service or script task and embedded subprocess that has some, by step id; `runs`: the
 * elements whose mappings Baton runs (compiled here, or refused here with an error), which
 * unrun-settings.ts leaves alone.
 */
export function readIoMappings(graph: ProcessGraph): {
  io: Map<string, IoSpec>;
  runs: Set<string>;
  diagnostics: Diagnostic[];
} {
  const io = new Map<string, IoSpec>();
  const runs = new Set<string>();
  const diagnostics: Diagnostic[] = [];
  for (const node of graph.nodes.values()) {
    // A compensation handler's task is created by the saga, which runs no mappings: it keeps the "not run" warning.
    // A subprocess runs them on every entry: each pass of a loop marker or a sequential multi-instance one.
    // A parallel multi-instance subprocess (a call of its body) runs its inputs once per element.
    // An event subprocess runs them as an embedded one does, once per firing when it does not interrupt (Zeebe's rule).
    const runsHere =
      node.kind === 'serviceTask' ||
      node.kind === 'scriptTask' ||
      node.kind === 'subProcess' ||
      (node.kind === 'callActivity' && runsInBodies(node.element)) ||
      node.element.$type === 'bpmn:UserTask' ||
      mapsWhenFired(node) ||
      node.kind === 'eventSubProcess' ||
      passes(node);
    if (!runsHere || node.element.isForCompensation) continue;
    runs.add(node.id);
    const values = (node.element as { extensionElements?: { values?: MappingHolder[] } }).extensionElements?.values ?? [];
    const holders = values.filter((v) => (IO_MAPPING_TYPES as readonly string[]).includes(v.$type));
    if (holders.length === 0) continue;
    const problems: string[] = [];
    const spec: IoSpec = { inputs: [], outputs: [] };
    for (const holder of holders) {
      if (holder.$type === 'camunda:InputOutput') {
        for (const p of holder.inputParameters ?? []) pushMapping(spec.inputs, readCamunda(p, 'input', problems), problems);
        for (const p of holder.outputParameters ?? []) pushMapping(spec.outputs, readCamunda(p, 'output', problems), problems);
      } else {
        for (const child of holder.$children ?? []) {
          const direction = child.$type === 'zeebe:input' ? 'input' : child.$type === 'zeebe:output' ? 'output' : undefined;
          if (!direction) continue;
          const list = direction === 'input' ? spec.inputs : spec.outputs;
          pushMapping(list, readZeebe(child, direction, problems), problems);
        }
      }
    }
    if (problems.length > 0) {
      diagnostics.push(
        errorAt(
          node.id,
          `${WHAT[node.element.$type] ?? WHAT[node.kind ?? '']} ${describeElement(node.element)}: ${problems.join('; ')}`,
        ),
      );
      continue;
    }
    // A catch event's inputs are its locals while it waits (advance.ts startWait); a boundary waits
    // with its host, whose inputs are the host's, and an event subprocess's start with its scope.
    if ((node.kind === 'boundaryEvent' || node.kind === 'eventSubProcessStart') && spec.inputs.length > 0) {
      diagnostics.push(
        warningAt(
          node.id,
          `${describeElement(node.element)}: input mappings are not run on a boundary event or an event subprocess's start (its output mappings are): its timer, condition or correlation key reads the variables as they are; put them on the event subprocess`,
        ),
      );
      spec.inputs = [];
    }
    if (spec.inputs.length > 0 || spec.outputs.length > 0) io.set(node.id, spec);
  }
  return { io, runs, diagnostics };
}

/** What starts an instance at a process's start event whose mappings run as the instance starts. */
const STARTED_BY = [
  'bpmn:MessageEventDefinition',
  'bpmn:SignalEventDefinition',
  'bpmn:TimerEventDefinition',
  'bpmn:ConditionalEventDefinition',
];

/**
 * A start event (none, message, signal, timer or conditional), an end event, a none, link or
 * signal throw, or a task that does nothing: the token passes it at once, and its mappings run
 * as it passes (inputs, its locals; then outputs over them). A message or signal start's outputs
 * map the payload. A signal throw's inputs are what its signal carries in a Zeebe file.
 */
function passes(node: GraphNode): boolean {
  const definitions = (node.element as { eventDefinitions?: { $type: string }[] }).eventDefinitions ?? [];
  if (node.kind === 'startEvent') return definitions.every((d) => STARTED_BY.includes(d.$type));
  return node.kind === 'endEvent' || node.kind === 'passThrough' || node.kind === 'signalThrow';
}

/** The triggers whose firing runs a catch event's output mappings: over a payload (an error's variables too), or over the variables alone. */
const FIRED_BY = [
  'bpmn:ErrorEventDefinition',
  'bpmn:EscalationEventDefinition',
  'bpmn:MessageEventDefinition',
  'bpmn:SignalEventDefinition',
  'bpmn:TimerEventDefinition',
  'bpmn:ConditionalEventDefinition',
];

/**
 * A message, signal, timer or conditional catch event, receive task, boundary event or event
 * subprocess start, or an error or escalation boundary or start: its output mappings run when it fires, over the payload of a message or signal
 * or the variables an error carries. After an event-based
 * gateway the first event to come wins the race whatever its mappings make of the payload: one
 * that cannot be mapped still ends the race, and waits in its incident. A non-interrupting
 * boundary maps each firing's payload before its path runs.
 */
function mapsWhenFired(node: GraphNode): boolean {
  const catches = node.kind === 'catchEvent' || node.kind === 'boundaryEvent' || node.kind === 'eventSubProcessStart';
  if (!catches || node.element.$type === 'bpmn:UserTask') return false;
  const definitions = (node.element as { eventDefinitions?: { $type: string }[] }).eventDefinitions ?? [];
  return node.element.$type === 'bpmn:ReceiveTask' || definitions.some((d) => FIRED_BY.includes(d.$type));
}

function pushMapping(
  list: (IoMapping | ScriptMapping)[],
  mapping: IoMapping | ScriptMapping | undefined,
  problems: string[],
): void {
  if (!mapping) return;
  if (!('feel' in mapping)) {
    list.push(mapping);
    return;
  }
  if (needsThread(mapping.feel)) {
    problems.push(
      `mapping to ${mapping.target} "${mapping.source}" iterates (for, some, every): compute the value in the worker`,
    );
    return;
  }
  const error = checkFeel(mapping.feel);
  if (error !== undefined) problems.push(`mapping to ${mapping.target} "${mapping.source}": ${error}`);
  else list.push(mapping);
}

function readCamunda(
  parameter: CamundaValue,
  direction: 'input' | 'output',
  problems: string[],
): IoMapping | ScriptMapping | undefined {
  const what = `camunda:${direction}Parameter "${parameter.name ?? ''}"`;
  const name = parameter.name?.trim() ?? '';
  if (name === '') {
    problems.push(`a camunda:${direction}Parameter has no name: give it the variable name`);
    return undefined;
  }
  if (name.includes('.')) {
    problems.push(`${what}: a name with a dot is not supported (Baton reads dots as paths): rename the variable`);
    return undefined;
  }
  // A whole parameter may be a script; one inside a list or a map stays refused (camundaFeel).
  const script = parameter.definition;
  if (script?.$type === 'camunda:Script' && isJavaScript(script.scriptFormat ?? ''))
    return readScript(script, name, what, problems);
  const feel = camundaFeel(parameter, what, problems);
  return feel === undefined ? undefined : { target: name, feel, source: sourceText(parameter) };
}

function readScript(script: CamundaValue, target: string, what: string, problems: string[]): ScriptMapping | undefined {
  if ((script as CamundaValue & { resource?: string }).resource) {
    problems.push(`${what} is a script kept in a resource, which Baton does not load: write the script inline`);
    return undefined;
  }
  const body = script.value ?? '';
  if (body.trim() === '') {
    problems.push(`${what} is an empty script: write one, or give the parameter a value`);
    return undefined;
  }
  const problem = javaScriptSyntax(body);
  if (problem !== undefined) {
    problems.push(`${what}: ${problem}`);
    return undefined;
  }
  return { target, javascript: body, source: body.trim() };
}

/** The FEEL of a parameter, list item or map entry: a list, a map, a script (refused) or text. */
function camundaFeel(value: CamundaValue, what: string, problems: string[]): string | undefined {
  if (value.$type === 'camunda:List') return joinAll(value.items ?? [], (item) => camundaFeel(item, what, problems), '[', ']');
  if (value.$type === 'camunda:Map') {
    const entry = (e: CamundaValue) => {
      const inner = camundaFeel(e, what, problems);
      return inner === undefined ? undefined : `${JSON.stringify(e.key ?? '')}: ${inner}`;
    };
    return joinAll(value.entries ?? [], entry, '{', '}');
  }
  if (value.$type === 'camunda:Script') return refuseScript(value, what, problems);
  if (value.definition) return camundaFeel(value.definition, what, problems);
  return textFeel(value.value, what, problems);
}

function joinAll<T>(items: T[], each: (item: T) => string | undefined, open: string, close: string): string | undefined {
  const parts = items.map(each);
  return parts.every((p) => p !== undefined) ? `${open}${parts.join(', ')}${close}` : undefined;
}

function refuseScript(script: CamundaValue, what: string, problems: string[]): undefined {
  problems.push(
    isJavaScript(script.scriptFormat ?? '')
      ? `${what} holds a JavaScript script inside a list or a map, which Baton does not run: make the whole parameter the script, or write the value as an expression such as \${order.total}`
      : `${what} is a ${script.scriptFormat ?? ''} script (camunda:script), which Baton does not run: write it in JavaScript, write the value as an expression such as \${order.total}, or compute it in the worker`,
  );
  return undefined;
}

/** Empty text is null (as in Camunda 7); a whole `${...}` is an expression; anything else is a literal string. */
function textFeel(text: string | undefined, what: string, problems: string[]): string | undefined {
  if (text === undefined || text.trim() === '') return 'null';
  const trimmed = text.trim();
  if (/^[$#]\{[\s\S]*\}$/.test(trimmed)) {
    const feel = toFeel(trimmed);
    if (feel.ok) return feel.feel;
    problems.push(`${what} "${trimmed}" cannot be used: ${feel.message}`);
    return undefined;
  }
  if (/[$#]\{/.test(text)) {
    problems.push(`${what} "${trimmed}" mixes text and expressions, which Baton does not evaluate: write one \${...} expression`);
    return undefined;
  }
  return JSON.stringify(text);
}

function readZeebe(
  mapping: { source?: string; target?: string },
  direction: 'input' | 'output',
  problems: string[],
): IoMapping | undefined {
  const target = mapping.target?.trim() ?? '';
  const source = mapping.source ?? '';
  const what = `zeebe:${direction} to "${target}"`;
  if (target === '' || !target.split('.').every((segment) => SEGMENT.test(segment))) {
    problems.push(`zeebe:${direction} target "${target}" is not a variable name or a dotted path such as order.total`);
    return undefined;
  }
  if (source.trim() === '') return { target, feel: 'null', source };
  if (!source.trim().startsWith('=')) return { target, feel: JSON.stringify(source), source };
  const feel = toFeel(source);
  if (feel.ok) return { target, feel: feel.feel, source };
  problems.push(`${what}: source "${source}" cannot be used: ${feel.message}`);
  return undefined;
}

function sourceText(parameter: CamundaValue): string {
  const definition = parameter.definition;
  if (definition?.$type === 'camunda:List') return '<camunda:list>';
  if (definition?.$type === 'camunda:Map') return '<camunda:map>';
  return parameter.value?.trim() ?? '';
}
