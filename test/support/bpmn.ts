// Builds small BPMN files for tests without diagram layout.

export type NodeSpec =
  | { id: string; type: 'startEvent' | 'endEvent' | 'terminateEndEvent' | 'parallelGateway' }
  | { id: string; type: 'exclusiveGateway' | 'inclusiveGateway'; default?: string }
  | { id: string; type: 'serviceTask'; topic: string; retries?: number; priority?: number };

export interface FlowSpec {
  id?: string;
  from: string;
  to: string;
  condition?: string;
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function buildBpmn(processId: string, nodes: NodeSpec[], flows: FlowSpec[]): string {
  const named = flows.map((f, i) => ({ ...f, id: f.id ?? `Flow_${i + 1}` }));
  const incoming = (id: string) => named.filter((f) => f.to === id).map((f) => `<bpmn:incoming>${f.id}</bpmn:incoming>`).join('');
  const outgoing = (id: string) => named.filter((f) => f.from === id).map((f) => `<bpmn:outgoing>${f.id}</bpmn:outgoing>`).join('');
  const body = nodes.map((n) => {
    const links = incoming(n.id) + outgoing(n.id);
    switch (n.type) {
      case 'serviceTask': {
        const extra = `${n.retries !== undefined ? ` baton:retries="${n.retries}"` : ''}${n.priority !== undefined ? ` camunda:taskPriority="${n.priority}"` : ''}`;
        return `<bpmn:serviceTask id="${n.id}" camunda:type="external" camunda:topic="${escapeXml(n.topic)}"${extra}>${links}</bpmn:serviceTask>`;
      }
      case 'terminateEndEvent':
        return `<bpmn:endEvent id="${n.id}">${links}<bpmn:terminateEventDefinition id="${n.id}_def"/></bpmn:endEvent>`;
      case 'exclusiveGateway':
      case 'inclusiveGateway':
        return `<bpmn:${n.type} id="${n.id}"${n.default ? ` default="${n.default}"` : ''}>${links}</bpmn:${n.type}>`;
      default:
        return `<bpmn:${n.type} id="${n.id}">${links}</bpmn:${n.type}>`;
    }
  });
  const flowXml = named.map((f) => f.condition
    ? `<bpmn:sequenceFlow id="${f.id}" sourceRef="${f.from}" targetRef="${f.to}"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${escapeXml(f.condition)}</bpmn:conditionExpression></bpmn:sequenceFlow>`
    : `<bpmn:sequenceFlow id="${f.id}" sourceRef="${f.from}" targetRef="${f.to}"/>`);
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:baton="https://baton.dev/schema/bpmn/1.0" id="Definitions_${processId}" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="${processId}" isExecutable="true">
    ${[...body, ...flowXml].join('\n    ')}
  </bpmn:process>
</bpmn:definitions>
`;
}

/** start -> one service task -> end */
export function singleTaskBpmn(processId: string, topic: string, opts: { retries?: number } = {}): string {
  return buildBpmn(processId, [
    { id: 'start', type: 'startEvent' },
    { id: 'work', type: 'serviceTask', topic, ...opts },
    { id: 'end', type: 'endEvent' },
  ], [{ from: 'start', to: 'work' }, { from: 'work', to: 'end' }]);
}

/** start -> fork -> a, b -> join -> end */
export function parallelBpmn(processId: string, topicA: string, topicB: string): string {
  return buildBpmn(processId, [
    { id: 'start', type: 'startEvent' },
    { id: 'fork', type: 'parallelGateway' },
    { id: 'a', type: 'serviceTask', topic: topicA },
    { id: 'b', type: 'serviceTask', topic: topicB },
    { id: 'join', type: 'parallelGateway' },
    { id: 'end', type: 'endEvent' },
  ], [
    { from: 'start', to: 'fork' }, { from: 'fork', to: 'a' }, { from: 'fork', to: 'b' },
    { from: 'a', to: 'join' }, { from: 'b', to: 'join' }, { from: 'join', to: 'end' },
  ]);
}
