// Builds small BPMN files for tests without diagram layout.

export interface EventTrigger {
  timer?: { duration?: string; date?: string; cycle?: string };
  message?: string;
  /** baton:correlationKey expression */
  correlationKey?: string;
  signal?: string;
  /** error boundary; code undefined = catch-all */
  error?: { code?: string; codeVariable?: string; messageVariable?: string };
}

export type NodeSpec =
  | { id: string; type: 'startEvent' | 'endEvent' | 'terminateEndEvent' | 'parallelGateway' | 'eventBasedGateway' }
  | ({ id: string; type: 'catchEvent' } & EventTrigger)
  | { id: string; type: 'timerStart'; timer: NonNullable<EventTrigger['timer']> }
  /** message or signal start event */
  | ({ id: string; type: 'eventStart' } & EventTrigger)
  | ({ id: string; type: 'boundaryEvent'; attachedTo: string; interrupting?: boolean } & EventTrigger)
  | { id: string; type: 'exclusiveGateway' | 'inclusiveGateway'; default?: string }
  | {
      id: string;
      type: 'serviceTask';
      topic: string;
      retries?: number;
      priority?: number;
      forCompensation?: boolean;
      onExhausted?: 'compensate' | 'incident';
      multiInstance?: MultiInstance;
      io?: IoMappings;
    }
  /** compensation boundary on attachedTo, associated with the handler task */
  | { id: string; type: 'compensationBoundary'; attachedTo: string; handler: string }
  /** compensation throw: an intermediate throw event, or an end event with end: true */
  | { id: string; type: 'compensationThrow'; activityRef?: string; end?: boolean }
  /** error end event; code undefined = an error without a code */
  | { id: string; type: 'errorEndEvent'; code?: string }
  /** embedded subprocess with its own nodes and flows (flow ids default to <id>_Flow_<n>) */
  | { id: string; type: 'subProcess'; nodes: NodeSpec[]; flows: FlowSpec[]; io?: IoMappings }
  /** call activity (Camunda 7): every variable in and out */
  | { id: string; type: 'callActivity'; calledElement: string };

/** multiInstanceLoopCharacteristics with camunda:collection/elementVariable and baton:outputCollection/outputElement */
export interface MultiInstance {
  /** absent: no camunda:collection attribute */
  collection?: string;
  /** the loopCardinality element's body */
  cardinality?: string;
  elementVariable?: string;
  sequential?: boolean;
  completionCondition?: string;
  outputCollection?: string;
  outputElement?: string;
}

/** camunda:inputOutput of a service task or a subprocess: [name, body] pairs, the body as written (text or ${...}) */
export interface IoMappings {
  inputs?: [string, string][];
  outputs?: [string, string][];
}

function ioXml(io: IoMappings | undefined): string {
  if (!io) return '';
  const params = (tag: string, list: [string, string][] = []) =>
    list.map(([name, body]) => `<camunda:${tag} name="${escapeXml(name)}">${escapeXml(body)}</camunda:${tag}>`).join('');
  return `<bpmn:extensionElements><camunda:inputOutput>${params('inputParameter', io.inputs)}${params('outputParameter', io.outputs)}</camunda:inputOutput></bpmn:extensionElements>`;
}

function loopXml(id: string, m: MultiInstance): string {
  const attrs =
    `${m.collection !== undefined ? `camunda:collection="${escapeXml(m.collection)}"` : ''}${m.elementVariable ? ` camunda:elementVariable="${m.elementVariable}"` : ''}${m.sequential ? ' isSequential="true"' : ''}` +
    `${m.outputCollection ? ` baton:outputCollection="${m.outputCollection}"` : ''}${m.outputElement ? ` baton:outputElement="${escapeXml(m.outputElement)}"` : ''}`;
  const cardinality =
    m.cardinality !== undefined
      ? `<bpmn:loopCardinality xsi:type="bpmn:tFormalExpression">${escapeXml(m.cardinality)}</bpmn:loopCardinality>`
      : '';
  const condition = m.completionCondition
    ? `<bpmn:completionCondition xsi:type="bpmn:tFormalExpression">${escapeXml(m.completionCondition)}</bpmn:completionCondition>`
    : '';
  return `<bpmn:multiInstanceLoopCharacteristics id="${id}_loop" ${attrs}>${cardinality}${condition}</bpmn:multiInstanceLoopCharacteristics>`;
}

export interface FlowSpec {
  id?: string;
  from: string;
  to: string;
  condition?: string;
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function eventDefinition(id: string, t: EventTrigger, roots: string[]): string {
  if (t.timer) {
    const [kind, value] = Object.entries(t.timer)[0] ?? ['duration', 'PT1S'];
    const tag = kind === 'date' ? 'timeDate' : kind === 'cycle' ? 'timeCycle' : 'timeDuration';
    return `<bpmn:timerEventDefinition id="${id}_def"><bpmn:${tag} xsi:type="bpmn:tFormalExpression">${escapeXml(value)}</bpmn:${tag}></bpmn:timerEventDefinition>`;
  }
  if (t.message !== undefined) {
    roots.push(`<bpmn:message id="${id}_msg" name="${escapeXml(t.message)}"/>`);
    return `<bpmn:messageEventDefinition id="${id}_def" messageRef="${id}_msg"/>`;
  }
  if (t.signal !== undefined) {
    roots.push(`<bpmn:signal id="${id}_sig" name="${escapeXml(t.signal)}"/>`);
    return `<bpmn:signalEventDefinition id="${id}_def" signalRef="${id}_sig"/>`;
  }
  if (t.error) {
    const vars = `${t.error.codeVariable ? ` camunda:errorCodeVariable="${t.error.codeVariable}"` : ''}${t.error.messageVariable ? ` camunda:errorMessageVariable="${t.error.messageVariable}"` : ''}`;
    if (t.error.code === undefined) return `<bpmn:errorEventDefinition id="${id}_def"${vars}/>`;
    roots.push(`<bpmn:error id="${id}_err" errorCode="${escapeXml(t.error.code)}"/>`);
    return `<bpmn:errorEventDefinition id="${id}_def" errorRef="${id}_err"${vars}/>`;
  }
  return '';
}

export function buildBpmn(processId: string, nodes: NodeSpec[], flows: FlowSpec[]): string {
  const roots: string[] = [];
  const artifacts: string[] = [];
  const content = renderScope(nodes, flows, 'Flow_', roots, artifacts);
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:baton="https://baton.dev/schema/bpmn/1.0" id="Definitions_${processId}" targetNamespace="http://bpmn.io/schema/bpmn">
  ${roots.join('\n  ')}
  <bpmn:process id="${processId}" isExecutable="true">
    ${[...content, ...artifacts].join('\n    ')}
  </bpmn:process>
</bpmn:definitions>
`;
}

function renderScope(nodes: NodeSpec[], flows: FlowSpec[], flowPrefix: string, roots: string[], artifacts: string[]): string[] {
  const named = flows.map((f, i) => ({ ...f, id: f.id ?? `${flowPrefix}${i + 1}` }));
  const incoming = (id: string) =>
    named
      .filter((f) => f.to === id)
      .map((f) => `<bpmn:incoming>${f.id}</bpmn:incoming>`)
      .join('');
  const outgoing = (id: string) =>
    named
      .filter((f) => f.from === id)
      .map((f) => `<bpmn:outgoing>${f.id}</bpmn:outgoing>`)
      .join('');
  const body = nodes.map((n) => {
    const links = incoming(n.id) + outgoing(n.id);
    switch (n.type) {
      case 'subProcess':
        return `<bpmn:subProcess id="${n.id}">${ioXml(n.io)}${links}${renderScope(n.nodes, n.flows, `${n.id}_Flow_`, roots, artifacts).join('')}</bpmn:subProcess>`;
      case 'errorEndEvent':
        if (n.code === undefined)
          return `<bpmn:endEvent id="${n.id}">${links}<bpmn:errorEventDefinition id="${n.id}_def"/></bpmn:endEvent>`;
        roots.push(`<bpmn:error id="${n.id}_err" errorCode="${escapeXml(n.code)}"/>`);
        return `<bpmn:endEvent id="${n.id}">${links}<bpmn:errorEventDefinition id="${n.id}_def" errorRef="${n.id}_err"/></bpmn:endEvent>`;
      case 'compensationBoundary':
        artifacts.push(
          `<bpmn:association id="${n.id}_assoc" associationDirection="One" sourceRef="${n.id}" targetRef="${n.handler}"/>`,
        );
        return `<bpmn:boundaryEvent id="${n.id}" attachedToRef="${n.attachedTo}"><bpmn:compensateEventDefinition id="${n.id}_def"/></bpmn:boundaryEvent>`;
      case 'compensationThrow': {
        const tag = n.end ? 'endEvent' : 'intermediateThrowEvent';
        const ref = n.activityRef ? ` activityRef="${n.activityRef}"` : '';
        return `<bpmn:${tag} id="${n.id}">${links}<bpmn:compensateEventDefinition id="${n.id}_def"${ref}/></bpmn:${tag}>`;
      }
      case 'serviceTask': {
        const extra =
          `${n.retries !== undefined ? ` baton:retries="${n.retries}"` : ''}${n.priority !== undefined ? ` camunda:taskPriority="${n.priority}"` : ''}` +
          `${n.forCompensation ? ' isForCompensation="true"' : ''}${n.onExhausted ? ` baton:onExhausted="${n.onExhausted}"` : ''}`;
        return `<bpmn:serviceTask id="${n.id}" camunda:type="external" camunda:topic="${escapeXml(n.topic)}"${extra}>${ioXml(n.io)}${links}${n.multiInstance ? loopXml(n.id, n.multiInstance) : ''}</bpmn:serviceTask>`;
      }
      case 'callActivity':
        return `<bpmn:callActivity id="${n.id}" calledElement="${escapeXml(n.calledElement)}"><bpmn:extensionElements><camunda:in variables="all"/><camunda:out variables="all"/></bpmn:extensionElements>${links}</bpmn:callActivity>`;
      case 'terminateEndEvent':
        return `<bpmn:endEvent id="${n.id}">${links}<bpmn:terminateEventDefinition id="${n.id}_def"/></bpmn:endEvent>`;
      case 'timerStart':
      case 'eventStart':
        return `<bpmn:startEvent id="${n.id}">${links}${eventDefinition(n.id, n, roots)}</bpmn:startEvent>`;
      case 'catchEvent': {
        const key = n.correlationKey ? ` baton:correlationKey="${escapeXml(n.correlationKey)}"` : '';
        return `<bpmn:intermediateCatchEvent id="${n.id}"${key}>${links}${eventDefinition(n.id, n, roots)}</bpmn:intermediateCatchEvent>`;
      }
      case 'boundaryEvent': {
        const key = n.correlationKey ? ` baton:correlationKey="${escapeXml(n.correlationKey)}"` : '';
        const cancel = n.interrupting === false ? ' cancelActivity="false"' : '';
        return `<bpmn:boundaryEvent id="${n.id}" attachedToRef="${n.attachedTo}"${cancel}${key}>${links}${eventDefinition(n.id, n, roots)}</bpmn:boundaryEvent>`;
      }
      case 'exclusiveGateway':
      case 'inclusiveGateway':
        return `<bpmn:${n.type} id="${n.id}"${n.default ? ` default="${n.default}"` : ''}>${links}</bpmn:${n.type}>`;
      default:
        return `<bpmn:${n.type} id="${n.id}">${links}</bpmn:${n.type}>`;
    }
  });
  const flowXml = named.map((f) =>
    f.condition
      ? `<bpmn:sequenceFlow id="${f.id}" sourceRef="${f.from}" targetRef="${f.to}"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${escapeXml(f.condition)}</bpmn:conditionExpression></bpmn:sequenceFlow>`
      : `<bpmn:sequenceFlow id="${f.id}" sourceRef="${f.from}" targetRef="${f.to}"/>`,
  );
  return [...body, ...flowXml];
}

/** start -> one service task -> end */
export function singleTaskBpmn(processId: string, topic: string, opts: { retries?: number } = {}): string {
  return buildBpmn(
    processId,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'work', type: 'serviceTask', topic, ...opts },
      { id: 'end', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'work' },
      { from: 'work', to: 'end' },
    ],
  );
}

/** start -> fork -> a, b -> join -> end */
export function parallelBpmn(processId: string, topicA: string, topicB: string): string {
  return buildBpmn(
    processId,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'fork', type: 'parallelGateway' },
      { id: 'a', type: 'serviceTask', topic: topicA },
      { id: 'b', type: 'serviceTask', topic: topicB },
      { id: 'join', type: 'parallelGateway' },
      { id: 'end', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'fork' },
      { from: 'fork', to: 'a' },
      { from: 'fork', to: 'b' },
      { from: 'a', to: 'join' },
      { from: 'b', to: 'join' },
      { from: 'join', to: 'end' },
    ],
  );
}

/** start -> review -> rejected? -> rework -> review again; approved -> end */
export function reworkBpmn(key: string): string {
  return buildBpmn(
    key,
    [
      { id: 's', type: 'startEvent' },
      { id: 'review', type: 'serviceTask', topic: `${key}-review` },
      { id: 'decide', type: 'exclusiveGateway', default: 'approved' },
      { id: 'rework', type: 'serviceTask', topic: `${key}-rework` },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'review' },
      { from: 'review', to: 'decide' },
      { id: 'rejected', from: 'decide', to: 'rework', condition: '=approved = false' },
      { id: 'approved', from: 'decide', to: 'e' },
      { id: 'again', from: 'rework', to: 'review' },
    ],
  );
}

/** start -> call (`calledElement`, every variable in and out) -> end */
export function callBpmn(processId: string, calledElement: string): string {
  return buildBpmn(
    processId,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'call', type: 'callActivity', calledElement },
      { id: 'end', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'call' },
      { from: 'call', to: 'end' },
    ],
  );
}

/** Inline XML for tests that write their elements by hand: a Camunda 7 external task on `<key>-<id>`. */
export const inlineTask = (id: string, key: string): string =>
  `<bpmn:serviceTask id="${id}" camunda:type="external" camunda:topic="${key}-${id}" />`;

export const inlineFlow = (id: string, from: string, to: string): string =>
  `<bpmn:sequenceFlow id="${id}" sourceRef="${from}" targetRef="${to}" />`;

/** A definitions document holding process `id` with `body`, and `after` (messages, escalations) beside it. */
export function inlineDefinitions(id: string, body: string[], after = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    ${body.join('\n    ')}
  </bpmn:process>
  ${after}
</bpmn:definitions>`;
}
