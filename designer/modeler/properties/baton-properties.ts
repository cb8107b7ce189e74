// Reads and edits what the runtime reads from an element, always through modeling commands
// so every edit is one undo step.
import type { BusinessObject, DiagramElement, Moddle, Modeling } from '../diagram-services.ts';

export interface TaskSettings {
  topic: string;
  retries: string;
  priority: string;
}

export interface FlowSettings {
  condition: string;
  /** the flow leaves an exclusive or inclusive gateway, so it may carry a condition or be the default */
  choosing: boolean;
  isDefault: boolean;
}

const CHOOSING = new Set(['bpmn:ExclusiveGateway', 'bpmn:InclusiveGateway', 'bpmn:ComplexGateway']);

function text(value: unknown): string {
  return value === undefined || value === null ? '' : String(value);
}

export default class BatonProperties {
  static $inject = ['modeling', 'moddle'];

  constructor(
    private readonly modeling: Modeling,
    private readonly moddle: Moddle,
  ) {}

  readTask(element: DiagramElement): TaskSettings | undefined {
    const bo = element.businessObject;
    if (bo.$type !== 'bpmn:ServiceTask') return undefined;
    return {
      topic: text(bo.get('camunda:topic')),
      retries: text(bo.get('baton:retries')),
      priority: text(bo.get('camunda:taskPriority')),
    };
  }

  readFlow(element: DiagramElement): FlowSettings | undefined {
    const bo = element.businessObject;
    if (bo.$type !== 'bpmn:SequenceFlow') return undefined;
    const source = element.source?.businessObject;
    const expression = bo.conditionExpression as BusinessObject | undefined;
    return {
      condition: text(expression?.body),
      choosing: Boolean(source && CHOOSING.has(source.$type)),
      isDefault: Boolean(source && source.default === bo),
    };
  }

  setName(element: DiagramElement, name: string): void {
    this.modeling.updateProperties(element, { name: name || undefined });
  }

  /** A topic makes the task external (camunda:type="external"), as Camunda Modeler writes it. */
  setTopic(element: DiagramElement, topic: string): void {
    const value = topic.trim();
    this.modeling.updateProperties(element, {
      'camunda:type': value ? 'external' : undefined,
      'camunda:topic': value || undefined,
    });
  }

  setRetries(element: DiagramElement, retries: string): void {
    this.modeling.updateProperties(element, { 'baton:retries': retries.trim() || undefined });
  }

  setPriority(element: DiagramElement, priority: string): void {
    this.modeling.updateProperties(element, { 'camunda:taskPriority': priority.trim() || undefined });
  }

  /** FEEL (`= x > 1`) or JUEL (`${x > 1}`); empty removes the condition. */
  setCondition(element: DiagramElement, condition: string): void {
    const body = condition.trim();
    const expression = body ? this.moddle.create('bpmn:FormalExpression', { body }) : undefined;
    this.modeling.updateProperties(element, { conditionExpression: expression });
  }

  setDefaultFlow(element: DiagramElement, isDefault: boolean): void {
    const source = element.source;
    if (!source) return;
    const current = source.businessObject.default;
    if (isDefault) this.modeling.updateProperties(source, { default: element.businessObject });
    else if (current === element.businessObject) this.modeling.updateProperties(source, { default: undefined });
  }
}
