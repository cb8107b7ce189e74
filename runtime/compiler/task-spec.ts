// Topic, retries and priority of an external service task. Camunda 7 files say
// camunda:type="external" camunda:topic="..."; Camunda 8 files say
// <zeebe:taskDefinition type="..." retries="..."/>; baton:retries overrides both.
import { errorAt } from './diagnostics.ts';
import { BPMN_NAMESPACE, describeElement, type BpmnElement, type BpmnFlowNode, type ZeebeTaskDefinition } from './model.ts';
import type { Diagnostic, JavaTaskTopic, TaskSpec } from './plan.ts';

export const TASK_DEFAULTS = { retries: 3, priority: 0 } as const;

export interface TaskContext {
  zeebe?: ZeebeTaskDefinition;
  /** elements whose xmlns declarations may bind the baton namespace: definitions, process */
  scopes: BpmnElement[];
  /** a task running Java code gets that code's class or expression as its topic (CompileOptions.javaTasksAsTopics), noted here */
  javaTopics?: JavaTaskTopic[];
}

export type ReadTaskSpecResult = { ok: true; task: TaskSpec } | { ok: false; diagnostics: Diagnostic[] };

export function readTaskSpec(element: BpmnFlowNode, context: TaskContext): ReadTaskSpecResult {
  const node = asTask(element);
  const id = node.id ?? '?';
  const topic = readTopic(node, context.zeebe, context.javaTopics);
  const retries = readRetries(node, context);
  const priority = readInteger(node.taskPriority, TASK_DEFAULTS.priority);
  const diagnostics: Diagnostic[] = [];
  if ('error' in topic) diagnostics.push(errorAt(id, topic.error));
  if ('error' in retries) diagnostics.push(errorAt(id, retries.error));
  if (priority === undefined) {
    diagnostics.push(
      errorAt(
        id,
        `Service task ${id} has invalid camunda:taskPriority "${node.taskPriority ?? ''}": use a whole number (expressions are not supported)`,
      ),
    );
  }
  const headers = readHeaders(node, diagnostics);
  const onExhausted = readBatonAttribute(node, context.scopes, 'onExhausted')?.trim();
  if (onExhausted !== undefined && onExhausted !== 'compensate' && onExhausted !== 'incident') {
    diagnostics.push(
      errorAt(id, `Service task ${id} has baton:onExhausted "${onExhausted}": use "compensate" or "incident" (the default)`),
    );
  }
  if (diagnostics.length === 0 && 'topic' in topic && 'retries' in retries && priority !== undefined) {
    return {
      ok: true,
      task: {
        topic: topic.topic,
        retries: retries.retries,
        priority,
        ...(onExhausted === 'compensate' ? { onExhausted: 'compensate' as const } : {}),
        ...(headers ? { headers } : {}),
      },
    };
  }
  return { ok: false, diagnostics };
}

/** zeebe:taskHeaders (key/value) and camunda:properties (name/value) of a task, in document order; a name given twice is an error. */
function readHeaders(node: BpmnFlowNode, diagnostics: Diagnostic[]): Record<string, string> | undefined {
  const values = (node as BpmnFlowNode & { extensionElements?: { values?: HeaderContainer[] } }).extensionElements?.values ?? [];
  const pairs: [string | undefined, string | undefined, string][] = [];
  for (const value of values) {
    if (value.$type === 'zeebe:taskHeaders') for (const h of value.$children ?? []) pairs.push([h.key, h.value, 'zeebe:header']);
    if (value.$type === 'camunda:Properties')
      for (const p of value.values ?? []) pairs.push([p.name, p.value, 'camunda:property']);
  }
  if (pairs.length === 0) return undefined;
  const headers: Record<string, string> = {};
  for (const [name, text, what] of pairs) {
    const key = name?.trim() ?? '';
    if (key === '')
      diagnostics.push(errorAt(node.id ?? '?', `Task ${node.id ?? '?'} has a ${what} without a name: name it or remove it`));
    else if (key in headers)
      diagnostics.push(errorAt(node.id ?? '?', `Task ${node.id ?? '?'} has the header "${key}" twice: keep one`));
    else headers[key] = text ?? '';
  }
  return headers;
}

interface HeaderContainer extends BpmnElement {
  readonly $children?: { key?: string; value?: string }[];
  readonly values?: { name?: string; value?: string }[];
}

const TASK_LABELS: Record<string, string> = {
  'bpmn:SendTask': 'Send task',
  'bpmn:BusinessRuleTask': 'Business rule task',
  'bpmn:IntermediateThrowEvent': 'Message throw event',
  'bpmn:EndEvent': 'Message end event',
};

/** The attributes Camunda 7 puts on a task, which a message throw or end event carries on its message event definition. */
const TASK_ATTRIBUTES = ['type', 'topic', 'taskPriority', 'class', 'expression', 'delegateExpression'] as const;

/**
 * A message throw or end event runs as an external task: it is read as a task whose Camunda 7
 * attributes are its message event definition's (its id, extensions and baton attributes are its own).
 */
function asTask(element: BpmnFlowNode): BpmnFlowNode {
  const definition = messageThrowDefinition(element);
  if (!definition) return element;
  const view = Object.create(element) as BpmnFlowNode;
  for (const name of TASK_ATTRIBUTES) Object.defineProperty(view, name, { value: definition[name] });
  return view;
}

export function messageThrowDefinition(element: BpmnElement): Record<string, string | undefined> | undefined {
  if (element.$type !== 'bpmn:IntermediateThrowEvent' && element.$type !== 'bpmn:EndEvent') return undefined;
  const definitions = (element as BpmnFlowNode).eventDefinitions ?? [];
  const message =
    definitions.length === 1 && definitions[0]?.$type === 'bpmn:MessageEventDefinition' ? definitions[0] : undefined;
  return message as unknown as Record<string, string | undefined> | undefined;
}

function readTopic(
  node: BpmnFlowNode,
  zeebe: ZeebeTaskDefinition | undefined,
  javaTopics?: JavaTaskTopic[],
): { topic: string } | { error: string } {
  const camundaTopic = node.type === 'external' ? node.topic?.trim() : undefined;
  if (camundaTopic) return { topic: camundaTopic };
  const zeebeType = zeebe?.type?.trim();
  if (zeebeType?.startsWith('=')) {
    return {
      error: `Service task ${describeElement(node)} computes its zeebe:taskDefinition type with an expression: Baton needs a fixed topic`,
    };
  }
  if (zeebeType) return { topic: zeebeType };
  const what = TASK_LABELS[node.$type] ?? 'Service task';
  const java = node as BpmnFlowNode & { class?: string; expression?: string; delegateExpression?: string };
  const [implementation, text] = java.class?.trim()
    ? ['camunda:class', java.class.trim()]
    : java.delegateExpression?.trim()
      ? ['camunda:delegateExpression', java.delegateExpression.trim()]
      : java.expression?.trim()
        ? ['camunda:expression', java.expression.trim()]
        : [undefined, undefined];
  const code = implementation ? `${implementation} "${text}"` : undefined;
  if (implementation && text && javaTopics) {
    // `${orderService.ship(execution)}` -> `orderService.ship(execution)`: what a worker subscribes to.
    const topic = /^[$#]\{([\s\S]*)\}$/.exec(text)?.[1]?.trim() || text;
    javaTopics.push({ elementId: node.id ?? '?', implementation, topic });
    return { topic };
  }
  if (code)
    return {
      error: `${what} ${node.id ?? '?'} runs Java code (${code}), which Baton does not run: set camunda:type="external" with a camunda:topic and do the work in an external worker, or deploy with javaTasksAsTopics to make its class or expression the topic`,
    };
  return {
    error: `${what} ${node.id ?? '?'} has no topic: set camunda:topic (with camunda:type=external) or a zeebe:taskDefinition type`,
  };
}

function readRetries(node: BpmnFlowNode, context: TaskContext): { retries: number } | { error: string } {
  const baton = readBatonAttribute(node, context.scopes, 'retries');
  const [text, source] =
    baton !== undefined ? [baton, 'baton:retries'] : [context.zeebe?.retries, 'zeebe:taskDefinition retries'];
  const retries = readInteger(text, TASK_DEFAULTS.retries);
  if (retries !== undefined && retries >= 0) return { retries };
  return { error: `Service task ${node.id ?? '?'} has invalid ${source} "${text ?? ''}": use a whole number of 0 or more` };
}

/** undefined when `text` is present but not a whole number. */
function readInteger(text: string | undefined, fallback: number): number | undefined {
  if (text === undefined || text.trim() === '') return fallback;
  if (!/^\s*-?\d+\s*$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * moddle keeps attributes of unknown namespaces in $attrs under the prefix the
 * file declared, so look up every prefix bound to the baton namespace.
 */
export function readBatonAttribute(node: BpmnFlowNode, scopes: BpmnElement[], name: string): string | undefined {
  const prefixes = new Set<string>();
  for (const scope of [...scopes, node]) {
    for (const [key, value] of Object.entries(scope.$attrs ?? {})) {
      if (key.startsWith('xmlns:') && value === BPMN_NAMESPACE.baton) prefixes.add(key.slice('xmlns:'.length));
    }
  }
  if (prefixes.size === 0) prefixes.add('baton');
  for (const prefix of prefixes) {
    const value = node.$attrs?.[`${prefix}:${name}`];
    if (value !== undefined) return value;
  }
  return undefined;
}
