// The XML of a new, empty diagram: one executable process with a start event, keyed by a
// slug of the diagram's name, in the chosen dialect.
import type { Dialect } from './dialect.ts';

function randomId(): string {
  return Math.random().toString(36).slice(2, 9);
}

/**
 * The process key a diagram name suggests: "Expense approval" → "expense-approval". An XML id
 * starts with a letter, so a name that gives none is prefixed.
 */
export function processKeyFor(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
  return /^[a-z]/.test(slug) ? slug : `process-${slug || randomId()}`;
}

const DIALECT_NAMESPACES: Record<Dialect, string> = {
  camunda7: 'xmlns:camunda="http://camunda.org/schema/1.0/bpmn"',
  // Camunda Modeler tells Zeebe files by their execution platform as well as by the namespace.
  zeebe:
    'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="Camunda Cloud"',
};

export function newDiagramXml(name: string, dialect: Dialect = 'camunda7'): string {
  const processId = processKeyFor(name);
  const escaped = name.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" ${DIALECT_NAMESPACES[dialect]} id="Definitions_${randomId()}" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="${processId}" name="${escaped}" isExecutable="true">
    <bpmn:startEvent id="StartEvent_1" />
  </bpmn:process>
  <bpmndi:BPMNDiagram id="BPMNDiagram_1">
    <bpmndi:BPMNPlane id="BPMNPlane_1" bpmnElement="${processId}">
      <bpmndi:BPMNShape id="StartEvent_1_di" bpmnElement="StartEvent_1">
        <dc:Bounds x="180" y="160" width="36" height="36" />
      </bpmndi:BPMNShape>
    </bpmndi:BPMNPlane>
  </bpmndi:BPMNDiagram>
</bpmn:definitions>
`;
}
