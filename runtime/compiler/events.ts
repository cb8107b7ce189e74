// Catch and boundary events -> what each waits for, and how boundaries attach.
import { errorAt, warningAt } from './diagnostics.ts';
import type { GraphNode, ProcessGraph } from './graph.ts';
import {
  BPMN_NAMESPACE,
  describeElement,
  type BpmnAssociation,
  type BpmnElement,
  type BpmnEventDefinition,
  type BpmnExpression,
} from './model.ts';
import { scriptCondition } from './conditions.ts';
import { readCamundaMapping, type CamundaInOut } from './call-activities.ts';
import type { BoundarySpec, Diagnostic, FlowCondition, ScriptCondition, SignalPayload, TimerSpec, WaitSpec } from './plan.ts';
import { checkFeel, toFeel } from '../shared/feel.ts';
import { firstDue, isCron } from '../shared/timers.ts';

export interface EventSpecs {
  waits: Map<string, WaitSpec>;
  boundaries: Map<string, BoundarySpec>;
  /** host id -> its boundary event ids, document order */
  attached: Map<string, string[]>;
  /** host id -> its compensation handler's id */
  compensations: Map<string, string>;
  /** compensation throw id -> the step it names, if any */
  throws: Map<string, { activityRef?: string }>;
  /** error end event id -> the error it throws */
  errors: Map<string, { errorCode?: string }>;
  /** signal throw or end event id -> the signal it broadcasts */
  signals: Map<string, { name: string; payload?: SignalPayload }>;
  /** escalation throw or end event id -> the code it throws */
  escalations: Map<string, { escalationCode: string }>;
  /** messages whose zeebe:subscription correlation key a catching event reads */
  subscriptions: Set<string>;
  diagnostics: Diagnostic[];
}

/** `zeebe`: the file is written for Camunda 8, so a cron cycle is Spring's, not Quartz's. */
export function readEventSpecs(graph: ProcessGraph, artifacts: BpmnElement[] = [], zeebe = false): EventSpecs {
  const specs: EventSpecs = {
    waits: new Map(),
    boundaries: new Map(),
    attached: new Map(),
    compensations: new Map(),
    throws: new Map(),
    errors: new Map(),
    signals: new Map(),
    escalations: new Map(),
    subscriptions: new Set(),
    diagnostics: [],
  };
  const associations = associationTargets(artifacts);
  for (const node of graph.nodes.values()) {
    if (node.kind === 'errorEndEvent') {
      const code = (node.element.eventDefinitions?.[0] as BpmnEventDefinition | undefined)?.errorRef?.errorCode?.trim();
      specs.errors.set(node.id, code ? { errorCode: code } : {});
    }
    if (node.kind === 'signalThrow') {
      const thrown = readSignalThrow(node, specs.diagnostics);
      if (thrown) specs.signals.set(node.id, thrown);
      continue;
    }
    if (node.kind === 'escalationThrow') {
      const code = readEscalationCode(node, 'throw', specs.diagnostics);
      if (code !== undefined) specs.escalations.set(node.id, { escalationCode: code });
      continue;
    }
    const waits =
      node.kind === 'catchEvent' ||
      node.kind === 'boundaryEvent' ||
      node.kind === 'startEvent' ||
      node.kind === 'eventSubProcessStart';
    if (!waits) continue;
    const definition = waitDefinitionOf(node);
    if (!definition) continue;
    const wait = readWait(node, definition, specs, zeebe);
    if (node.kind === 'startEvent' && wait?.trigger === 'timer' && wait.timer.kind === 'duration') {
      specs.diagnostics.push(
        errorAt(
          node.id,
          `Timer start event ${describeElement(node.element)} has a timeDuration: a start event needs a timeDate or a timeCycle (when should instances start?)`,
        ),
      );
    }
    if (wait) specs.waits.set(node.id, wait);
    if (node.kind === 'boundaryEvent') attachBoundary(graph, node, wait, specs);
    if (wait?.trigger === 'compensation') linkHandler(graph, node, associations.get(node.id) ?? [], specs);
  }
  checkCompensation(graph, specs);
  return specs;
}

/** What the event waits for; a receive task names its message itself, and waits as a message catch event does. */
function waitDefinitionOf(node: GraphNode): BpmnEventDefinition | undefined {
  if (isReceiveTask(node)) {
    const { messageRef } = node.element as GraphNode['element'] & { messageRef?: BpmnElement };
    return { $type: 'bpmn:MessageEventDefinition', messageRef, $instanceOf: () => false };
  }
  return node.element.eventDefinitions?.[0] as BpmnEventDefinition | undefined;
}

export function isReceiveTask(node: GraphNode): boolean {
  return node.element.$type === 'bpmn:ReceiveTask';
}

function associationTargets(artifacts: BpmnElement[]): Map<string, string[]> {
  const targets = new Map<string, string[]>();
  for (const a of artifacts) {
    if (a.$type !== 'bpmn:Association') continue;
    const { sourceRef, targetRef } = a as BpmnAssociation;
    if (sourceRef?.id && targetRef?.id) targets.set(sourceRef.id, [...(targets.get(sourceRef.id) ?? []), targetRef.id]);
  }
  return targets;
}

// A compensation boundary names its handler through an association, not a sequence flow.
function linkHandler(graph: ProcessGraph, boundary: GraphNode, targets: string[], specs: EventSpecs): void {
  const handler = targets.map((id) => graph.nodes.get(id)).find((n) => n?.element.isForCompensation);
  const host = specs.boundaries.get(boundary.id)?.attachedTo;
  if (!handler) {
    specs.diagnostics.push(
      errorAt(
        boundary.id,
        `Compensation boundary ${describeElement(boundary.element)} is not associated with a compensation handler: draw an association to a service task marked isForCompensation`,
      ),
    );
    return;
  }
  if (host) specs.compensations.set(host, handler.id);
}

function checkCompensation(graph: ProcessGraph, specs: EventSpecs): void {
  const linked = new Set(specs.compensations.values());
  for (const node of graph.nodes.values()) {
    const label = describeElement(node.element);
    if (node.element.isForCompensation) {
      if (node.kind !== 'serviceTask')
        specs.diagnostics.push(errorAt(node.id, `Compensation handler ${label} must be an external service task`));
      if (node.incoming.length > 0 || node.outgoing.length > 0) {
        specs.diagnostics.push(
          errorAt(
            node.id,
            `Compensation handler ${label} has sequence flows: a handler runs only through compensation, so remove its flows`,
          ),
        );
      }
      if (!linked.has(node.id))
        specs.diagnostics.push(
          errorAt(node.id, `Compensation handler ${label} is not associated with any compensation boundary event`),
        );
    }
    if (node.kind !== 'compensationThrow') continue;
    const definition = node.element.eventDefinitions?.[0] as BpmnEventDefinition | undefined;
    if (definition?.waitForCompletion === false) {
      specs.diagnostics.push(
        errorAt(
          node.id,
          `Compensation event ${label} has waitForCompletion="false": Baton always waits for the handlers; remove the attribute`,
        ),
      );
    }
    const activityRef = definition?.activityRef?.id;
    const compensableInside = (scope: string) => [...specs.compensations.keys()].some((host) => isInside(graph, host, scope));
    if (
      activityRef !== undefined &&
      !specs.compensations.has(activityRef) &&
      !(graph.nodes.get(activityRef)?.kind === 'subProcess' && compensableInside(activityRef))
    ) {
      specs.diagnostics.push(
        errorAt(node.id, `Compensation event ${label} names activity ${activityRef}, which has no compensation handler`),
      );
    }
    specs.throws.set(node.id, activityRef !== undefined ? { activityRef } : {});
  }
}

function readWait(node: GraphNode, definition: BpmnEventDefinition, specs: EventSpecs, zeebe: boolean): WaitSpec | undefined {
  const { diagnostics } = specs;
  const label = describeElement(node.element);
  switch (definition.$type) {
    case 'bpmn:TimerEventDefinition': {
      const read = readTimer(definition);
      // Only a cycle that is (or may turn out to be) cron needs to know whose cron it is.
      const cronLike = read?.kind === 'cycle' && (isCron(read.expression) || EXPRESSION.test(read.expression));
      const timer = read && cronLike && !zeebe ? { ...read, quartz: true as const } : read;
      if (!timer) {
        diagnostics.push(errorAt(node.id, `Timer event ${label} has no timeDuration, timeDate or timeCycle: set one`));
        return undefined;
      }
      if (EXPRESSION.test(timer.expression)) {
        // Evaluated when the timer starts: a start event's timer starts at deploy, with no variables to read.
        if (node.kind === 'startEvent' || node.kind === 'eventSubProcessStart') {
          diagnostics.push(
            errorAt(
              node.id,
              `Timer event ${label} computes its time with "${timer.expression}": a start event's timer is set when it is deployed or armed, before there are variables to read; write the date, duration or cycle itself`,
            ),
          );
          return undefined;
        }
        const feel = toFeel(timer.expression);
        if (!feel.ok) {
          diagnostics.push(errorAt(node.id, `Timer event ${label}: "${timer.expression}" cannot be used: ${feel.message}`));
          return undefined;
        }
        return { trigger: 'timer', timer: { ...timer, feel: feel.feel } };
      }
      const check = firstDue(timer);
      if (!check.ok) {
        diagnostics.push(errorAt(node.id, `Timer event ${label}: ${check.message}`));
        return undefined;
      }
      return { trigger: 'timer', timer };
    }
    case 'bpmn:MessageEventDefinition': {
      const name = definition.messageRef?.name?.trim();
      const what = isReceiveTask(node) ? 'Receive task' : 'Message event';
      if (!name) {
        diagnostics.push(errorAt(node.id, `${what} ${label} has no message with a name: reference a bpmn:message and name it`));
        return undefined;
      }
      const own = readCorrelationKey(node, diagnostics);
      // A message start event starts an instance whatever the key, in Zeebe too: only catching events read it.
      const subscription =
        node.kind === 'startEvent'
          ? undefined
          : readSubscriptionKey(node, definition.messageRef, specs.subscriptions, diagnostics);
      if (own && subscription) {
        diagnostics.push(
          errorAt(
            node.id,
            `${what} ${label} has both baton:correlationKey and its message's zeebe:subscription correlationKey: keep one`,
          ),
        );
        return undefined;
      }
      const correlationKey = own ?? subscription;
      return { trigger: 'message', name, ...(correlationKey ? { correlationKey } : {}) };
    }
    case 'bpmn:SignalEventDefinition': {
      const name = definition.signalRef?.name?.trim();
      if (!name) {
        diagnostics.push(
          errorAt(node.id, `Signal event ${label} has no signal with a name: reference a bpmn:signal and name it`),
        );
        return undefined;
      }
      return { trigger: 'signal', name };
    }
    case 'bpmn:CompensateEventDefinition':
      return { trigger: 'compensation' };
    case 'bpmn:ConditionalEventDefinition':
      return readConditional(node, definition, diagnostics);
    case 'bpmn:EscalationEventDefinition': {
      const code = readEscalationCode(node, 'catch', diagnostics);
      const variable = definition.escalationCodeVariable?.trim();
      return {
        trigger: 'escalation',
        ...(code ? { escalationCode: code } : {}),
        ...(variable ? { escalationCodeVariable: variable } : {}),
      };
    }
    case 'bpmn:ErrorEventDefinition': {
      const code = definition.errorRef?.errorCode?.trim();
      return {
        trigger: 'error',
        ...(code ? { errorCode: code } : {}),
        ...(definition.errorCodeVariable ? { errorCodeVariable: definition.errorCodeVariable } : {}),
        ...(definition.errorMessageVariable ? { errorMessageVariable: definition.errorMessageVariable } : {}),
      };
    }
    default:
      return undefined;
  }
}

/**
 * A conditional event's condition, FEEL or JUEL as on sequence flows. Camunda 7's variableName and
 * variableEvents narrow which changes make it look again; Baton looks after every transition of
 * the instance, which fires it at the same moments or sooner, and says so.
 */
function readConditional(node: GraphNode, definition: BpmnEventDefinition, diagnostics: Diagnostic[]): WaitSpec | undefined {
  const label = describeElement(node.element);
  const { condition, variableName, variableEvents } = definition as BpmnEventDefinition & {
    condition?: BpmnExpression;
    variableName?: string;
    variableEvents?: string;
  };
  const source = condition?.body?.trim() ?? '';
  if (source === '') {
    diagnostics.push(errorAt(node.id, `Conditional event ${label} has no condition: write one such as "= total > 100"`));
    return undefined;
  }
  const script = condition?.language?.toLowerCase() === 'feel' ? undefined : scriptCondition(condition);
  if (typeof script === 'string') {
    diagnostics.push(errorAt(node.id, `Condition of conditional event ${label} ${script}`));
    return undefined;
  }
  let compiled: FlowCondition | ScriptCondition | undefined = script;
  if (!compiled) {
    const feel = toFeel(source);
    if (!feel.ok) {
      diagnostics.push(errorAt(node.id, `Conditional event ${label}: ${feel.message}`));
      return undefined;
    }
    compiled = { feel: feel.feel, source };
  }
  if (variableName || variableEvents)
    diagnostics.push(
      warningAt(
        node.id,
        `Conditional event ${label}: camunda:variableName and camunda:variableEvents are not read; the condition is evaluated after every transition of the instance`,
      ),
    );
  return { trigger: 'conditional', condition: compiled };
}

/**
 * The signal a throw or end event broadcasts: a fixed name (an expression would name a signal
 * nothing can wait for by name), and the variables it carries: Camunda 7's camunda:in on the
 * event definition, or in a Zeebe file the event's input mappings (its locals, which the engine
 * evaluates as the event passes).
 */
function readSignalThrow(node: GraphNode, diagnostics: Diagnostic[]): { name: string; payload?: SignalPayload } | undefined {
  const definition = node.element.eventDefinitions?.[0] as
    (BpmnEventDefinition & { extensionElements?: { values?: SignalInValue[] } }) | undefined;
  const label = describeElement(node.element);
  const name = definition?.signalRef?.name?.trim();
  if (!name) {
    diagnostics.push(errorAt(node.id, `Signal event ${label} has no signal with a name: reference a bpmn:signal and name it`));
    return undefined;
  }
  if (EXPRESSION.test(name)) {
    diagnostics.push(
      errorAt(
        node.id,
        `Signal event ${label} computes its signal name ("${name}"): Baton broadcasts fixed names; write the name itself`,
      ),
    );
    return undefined;
  }
  const problems: string[] = [];
  const payload = readSignalIns(definition?.extensionElements?.values ?? [], problems);
  if (problems.length > 0) {
    diagnostics.push(errorAt(node.id, `Signal event ${label}: ${problems.join('; ')}`));
    return undefined;
  }
  const zeebeInputs = (
    (node.element as { extensionElements?: { values?: SignalInValue[] } }).extensionElements?.values ?? []
  ).some((v) => v.$type === 'zeebe:ioMapping' && (v.$children ?? []).some((c) => c.$type === 'zeebe:input'));
  if (payload) return { name, payload };
  return zeebeInputs ? { name, payload: { all: 'locals', mappings: [] } } : { name };
}

interface SignalInValue extends CamundaInOut {
  readonly $children?: { $type: string }[];
}

/** camunda:in on a signal event definition: variables="all" [local="true"], or source|sourceExpression -> target. */
function readSignalIns(values: readonly SignalInValue[], problems: string[]): SignalPayload | undefined {
  let payload: SignalPayload | undefined;
  for (const value of values) {
    if (value.$type !== 'camunda:In') {
      problems.push(`${value.$type} on a signal definition is not supported: a signal carries variables with camunda:in`);
      continue;
    }
    payload ??= { mappings: [] };
    if (value.businessKey !== undefined) {
      problems.push('camunda:in businessKey is not supported on a signal: pass the key as a variable with camunda:in');
      continue;
    }
    if (value.variables === 'all') {
      payload.all = value.local ? 'locals' : 'visible';
      continue;
    }
    if (value.local) {
      problems.push(
        'camunda:in local="true" is supported with variables="all" (the event\'s input parameters) only: name the variable itself',
      );
      continue;
    }
    const mapping = readCamundaMapping(value, 'camunda:in', problems);
    if (mapping) payload.mappings.push(mapping);
  }
  return payload;
}

/**
 * The escalation code an event throws or catches. A throw needs a fixed code (a catcher matches
 * it by text); a catch without one catches every escalation of its scope.
 */
function readEscalationCode(node: GraphNode, role: 'throw' | 'catch', diagnostics: Diagnostic[]): string | undefined {
  const definition = node.element.eventDefinitions?.[0] as BpmnEventDefinition | undefined;
  const label = describeElement(node.element);
  const code = definition?.escalationRef?.escalationCode?.trim();
  if (role === 'throw' && !code) {
    diagnostics.push(
      errorAt(
        node.id,
        `Escalation event ${label} throws no escalation code: reference a bpmn:escalation and give it an escalationCode`,
      ),
    );
    return undefined;
  }
  if (code && EXPRESSION.test(code)) {
    diagnostics.push(
      errorAt(
        node.id,
        `Escalation event ${label} computes its escalation code ("${code}"): Baton matches fixed codes; write the code itself`,
      ),
    );
    return undefined;
  }
  return code || undefined;
}

/** A timer written as an expression: Camunda 7's `${...}`/`#{...}`, Camunda 8's `=...`. */
const EXPRESSION = /^(=|[$#]\{)/;

function readTimer(definition: BpmnEventDefinition): TimerSpec | undefined {
  const pick = (kind: TimerSpec['kind'], e: BpmnExpression | undefined) =>
    e?.body?.trim() ? { kind, expression: e.body.trim() } : undefined;
  return pick('duration', definition.timeDuration) ?? pick('date', definition.timeDate) ?? pick('cycle', definition.timeCycle);
}

// `baton:correlationKey="= orderId"` (FEEL, or ${...}); without it the business key correlates.
function readCorrelationKey(node: GraphNode, diagnostics: Diagnostic[]): string | undefined {
  const attrs = node.element.$attrs ?? {};
  const prefix =
    Object.entries(attrs)
      .find(([k, v]) => k.startsWith('xmlns:') && v === BPMN_NAMESPACE.baton)?.[0]
      .slice(6) ?? 'baton';
  const source = attrs[`${prefix}:correlationKey`]?.trim();
  if (!source) return undefined;
  const feel = toFeel(source.startsWith('=') || source.startsWith('${') || source.startsWith('#{') ? source : `=${source}`);
  const problem = feel.ok ? checkFeel(feel.feel) : feel.message;
  if (problem !== undefined || !feel.ok) {
    diagnostics.push(
      errorAt(
        node.id,
        `Correlation key "${source}" of ${describeElement(node.element)} is not a valid expression: ${problem ?? ''}`,
      ),
    );
    return undefined;
  }
  return feel.feel;
}

/**
 * A Camunda 8 file's key: <zeebe:subscription correlationKey> on the message, FEEL after "=",
 * else the text itself as a fixed key.
 */
function readSubscriptionKey(
  node: GraphNode,
  message: BpmnElement | undefined,
  read: Set<string>,
  diagnostics: Diagnostic[],
): string | undefined {
  const values = (message as (BpmnElement & { extensionElements?: { values?: BpmnElement[] } }) | undefined)?.extensionElements
    ?.values;
  const subscription = values?.find((v) => v.$type === 'zeebe:subscription') as { correlationKey?: string } | undefined;
  const source = subscription?.correlationKey?.trim();
  if (!source || !message?.id) return undefined;
  read.add(message.id);
  if (!source.startsWith('=')) return JSON.stringify(source);
  const problem = checkFeel(source.slice(1));
  if (problem !== undefined) {
    diagnostics.push(
      errorAt(
        node.id,
        `The zeebe:subscription correlationKey "${source}" of the message ${describeElement(node.element)} waits for is not a valid expression: ${problem}`,
      ),
    );
    return undefined;
  }
  return source.slice(1).trim();
}

function attachBoundary(graph: ProcessGraph, node: GraphNode, wait: WaitSpec | undefined, specs: EventSpecs): void {
  const label = describeElement(node.element);
  const hostId = node.element.attachedToRef?.id;
  const host = hostId ? graph.nodes.get(hostId) : undefined;
  const interrupting = node.element.cancelActivity !== false;
  // Receive and user tasks wait as catch events do; their boundaries wait beside them.
  const receiving = host !== undefined && (isReceiveTask(host) || host.element.$type === 'bpmn:UserTask');
  const instant = host !== undefined && passesAtOnce(host);
  if (
    !host ||
    (host.kind !== 'serviceTask' && host.kind !== 'subProcess' && host.kind !== 'callActivity' && !receiving && !instant)
  ) {
    specs.diagnostics.push(
      errorAt(
        node.id,
        `Boundary event ${label} must be attached to a task, a receive task, a user task, an embedded subprocess or a call activity${hostId ? ` (it sits on ${hostId})` : ''}`,
      ),
    );
    return;
  }
  if (instant && !checkInstantHost(node, host, wait, specs)) return;
  // Nothing runs a receive task: no error is thrown there. A person throws one from a user task
  // (the tasklist's bpmn-error). Baton keeps no work of either to undo.
  const userTask = host.element.$type === 'bpmn:UserTask';
  if (receiving && ((wait?.trigger === 'error' && !userTask) || wait?.trigger === 'compensation')) {
    const what = isReceiveTask(host) ? 'receive task' : 'user task';
    specs.diagnostics.push(
      errorAt(
        node.id,
        wait.trigger === 'error'
          ? `Error boundary event ${label} sits on ${what} ${host.id}: no worker runs a ${what}, so no error is thrown there; remove the boundary, or use a timer or message boundary`
          : `Compensation boundary ${label} sits on ${what} ${host.id}: Baton undoes the work of tasks that workers run; attach the compensation to the task that does the work`,
      ),
    );
    return;
  }
  // Escalations are thrown by events inside a subprocess or a called process (one the called
  // process does not catch goes on to its call activity), and by the person holding a user task
  // (Camunda 7's handleEscalation); a service task's worker throws none.
  if (wait?.trigger === 'escalation' && host.kind !== 'subProcess' && host.kind !== 'callActivity' && !userTask) {
    specs.diagnostics.push(
      errorAt(
        node.id,
        `Escalation boundary event ${label} sits on ${describeElement(host.element)}, which throws no escalations: attach it to a subprocess or call activity whose events throw them, or to a user task (its holder raises them)`,
      ),
    );
    return;
  }
  if (host.kind === 'subProcess' && wait?.trigger === 'compensation') {
    specs.diagnostics.push(
      errorAt(
        node.id,
        `Compensation boundary ${label} sits on subprocess ${host.id}: attach compensation handlers to the tasks inside it (compensating the subprocess compensates them)`,
      ),
    );
    return;
  }
  if (host.scope !== node.scope) {
    specs.diagnostics.push(errorAt(node.id, `Boundary event ${label} must sit in the same scope as its host ${host.id}`));
    return;
  }
  if (node.incoming.length > 0) {
    specs.diagnostics.push(
      errorAt(
        node.id,
        `Boundary event ${label} has incoming sequence flows (${node.incoming.join(', ')}): it starts a path, nothing flows into it`,
      ),
    );
  }
  if (wait?.trigger === 'compensation' && node.outgoing.length > 0) {
    specs.diagnostics.push(
      errorAt(node.id, `Compensation boundary ${label} has outgoing sequence flows: it only links its handler by an association`),
    );
  }
  if (wait?.trigger === 'error' && !interrupting) {
    specs.diagnostics.push(
      errorAt(
        node.id,
        `Error boundary event ${label} is non-interrupting: an error always ends its task, so make it interrupting`,
      ),
    );
  }
  specs.boundaries.set(node.id, { attachedTo: host.id, interrupting });
  specs.attached.set(host.id, [...(specs.attached.get(host.id) ?? []), node.id]);
}

/**
 * A plain, manual or engine-run script task completes in the transition that reaches it, in
 * Camunda 7 and Zeebe alike: a boundary on it is armed and ended at once, so it never fires.
 * Baton deploys it, says so, and skips it when its host completes.
 */
function passesAtOnce(host: GraphNode): boolean {
  const type = host.element.$type;
  return (host.kind === 'passThrough' && (type === 'bpmn:Task' || type === 'bpmn:ManualTask')) || host.kind === 'scriptTask';
}

/** Answers false (with an error) when the boundary needs work on its host that Baton does not keep. */
function checkInstantHost(node: GraphNode, host: GraphNode, wait: WaitSpec | undefined, specs: EventSpecs): boolean {
  const label = describeElement(node.element);
  const what = host.kind === 'scriptTask' ? 'script task' : 'task that does nothing';
  if (wait?.trigger === 'compensation') {
    specs.diagnostics.push(
      errorAt(
        node.id,
        `Compensation boundary ${label} sits on ${what} ${host.id}: Baton undoes the work of tasks that workers run; attach the compensation to such a task, or undo the script's writes in a later step`,
      ),
    );
    return false;
  }
  if (wait?.trigger === 'escalation') return true; // refused below: nothing there raises one
  const why =
    wait?.trigger === 'error'
      ? host.kind === 'scriptTask'
        ? 'a script that throws raises an incident, it throws no BPMN error'
        : 'nothing runs there, so no error is thrown'
      : `the ${what} completes in the same transition that reaches it, so there is no time for it to fire`;
  specs.diagnostics.push(
    warningAt(
      node.id,
      `Boundary event ${label} on ${what} ${host.id} never fires (${why}): it is skipped when its host completes. Make the host a service or user task if the boundary should catch something`,
    ),
  );
  return true;
}

/** True when `stepId` is inside subprocess `scope`, at any depth. */
export function isInside(graph: ProcessGraph, stepId: string, scope: string): boolean {
  for (let at = graph.nodes.get(stepId)?.scope; at !== undefined; at = graph.nodes.get(at)?.scope) {
    if (at === scope) return true;
  }
  return false;
}
