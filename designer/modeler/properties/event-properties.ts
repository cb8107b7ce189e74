// Reads and edits what the runtime reads from events: timer expressions, message and signal
// names, message correlation keys and error codes. Edits are modeling commands (undoable);
// naming a new message/signal/error adds its root element first, then references it, so that
// first edit is two undo steps.
import type { BusinessObject, DiagramElement, Modeling } from '../diagram-services.ts';

export type TimerKind = 'duration' | 'date' | 'cycle';
export type ReferenceKind = 'message' | 'signal' | 'error';

export type EventSettings =
  | { type: 'timer'; timerKind: TimerKind; expression: string }
  | { type: 'message'; name: string; correlationKey: string; catches: boolean }
  | { type: 'signal'; name: string }
  | { type: 'error'; errorCode: string };

const TIMER_PROPERTY: Record<TimerKind, string> = { duration: 'timeDuration', date: 'timeDate', cycle: 'timeCycle' };
const REFERENCE: Record<ReferenceKind, { property: string; type: string; attribute: string }> = {
  message: { property: 'messageRef', type: 'bpmn:Message', attribute: 'name' },
  signal: { property: 'signalRef', type: 'bpmn:Signal', attribute: 'name' },
  error: { property: 'errorRef', type: 'bpmn:Error', attribute: 'errorCode' },
};

interface ModdleModeling extends Modeling {
  updateModdleProperties(element: DiagramElement, target: BusinessObject, properties: Record<string, unknown>): void;
}

interface BpmnFactory {
  create(type: string, attrs?: Record<string, unknown>): BusinessObject;
}

function definitionOf(element: DiagramElement): BusinessObject | undefined {
  return (element.businessObject.eventDefinitions as BusinessObject[] | undefined)?.[0];
}

function bodyOf(expression: unknown): string {
  return String((expression as BusinessObject | undefined)?.body ?? '');
}

export default class EventProperties {
  static $inject = ['modeling', 'bpmnFactory'];

  constructor(
    private readonly modeling: ModdleModeling,
    private readonly bpmnFactory: BpmnFactory,
  ) {}

  readEvent(element: DiagramElement): EventSettings | undefined {
    const definition = definitionOf(element);
    const bo = element.businessObject;
    switch (definition?.$type) {
      case 'bpmn:TimerEventDefinition': {
        const timerKind = (Object.keys(TIMER_PROPERTY) as TimerKind[]).find((k) => definition[TIMER_PROPERTY[k]]) ?? 'duration';
        return { type: 'timer', timerKind, expression: bodyOf(definition[TIMER_PROPERTY[timerKind]]) };
      }
      case 'bpmn:MessageEventDefinition': {
        const catches =
          bo.$type === 'bpmn:IntermediateCatchEvent' || bo.$type === 'bpmn:BoundaryEvent' || bo.$type === 'bpmn:StartEvent';
        return {
          type: 'message',
          name: this.referenceText(definition, 'message'),
          correlationKey: String(bo.get('baton:correlationKey') ?? ''),
          catches,
        };
      }
      case 'bpmn:SignalEventDefinition':
        return { type: 'signal', name: this.referenceText(definition, 'signal') };
      case 'bpmn:ErrorEventDefinition':
        return { type: 'error', errorCode: this.referenceText(definition, 'error') };
      default:
        return undefined;
    }
  }

  /** One timer property at a time: setting a duration clears a date or cycle. */
  setTimer(element: DiagramElement, kind: TimerKind, expression: string): void {
    const definition = definitionOf(element);
    if (!definition) return;
    const body = expression.trim();
    const properties: Record<string, unknown> = {};
    for (const k of Object.keys(TIMER_PROPERTY) as TimerKind[]) {
      properties[TIMER_PROPERTY[k]] = k === kind && body ? this.bpmnFactory.create('bpmn:FormalExpression', { body }) : undefined;
    }
    this.modeling.updateModdleProperties(element, definition, properties);
  }

  setCorrelationKey(element: DiagramElement, key: string): void {
    this.modeling.updateProperties(element, { 'baton:correlationKey': key.trim() || undefined });
  }

  /** Names the referenced message/signal (or sets the error's code), creating it when missing. */
  setReference(element: DiagramElement, kind: ReferenceKind, value: string): void {
    const definition = definitionOf(element);
    if (!definition) return;
    const { property, type, attribute } = REFERENCE[kind];
    const text = value.trim();
    const existing = definition[property] as BusinessObject | undefined;
    if (existing) {
      this.modeling.updateModdleProperties(element, existing, { [attribute]: text || undefined });
      return;
    }
    if (!text) return;
    const definitions = this.definitionsOf(element);
    if (!definitions) return;
    const root = this.bpmnFactory.create(type, { [attribute]: text, ...(kind === 'error' ? { name: text } : {}) });
    root.$parent = definitions;
    const rootElements = (definitions.rootElements as BusinessObject[] | undefined) ?? [];
    this.modeling.updateModdleProperties(element, definitions, { rootElements: [...rootElements, root] });
    this.modeling.updateModdleProperties(element, definition, { [property]: root });
  }

  private referenceText(definition: BusinessObject, kind: ReferenceKind): string {
    const ref = definition[REFERENCE[kind].property] as BusinessObject | undefined;
    return String(ref?.[REFERENCE[kind].attribute] ?? '');
  }

  private definitionsOf(element: DiagramElement): BusinessObject | undefined {
    let bo: BusinessObject | undefined = element.businessObject;
    while (bo && bo.$type !== 'bpmn:Definitions') bo = bo.$parent as BusinessObject | undefined;
    return bo;
  }
}
