// Says a compile problem the way an analyst reads the diagram: the element by its name and the
// panel field to fill, and, where the fix is obvious, offers it as one click (a modeling
// command, so Undo takes it back). The compiler's own text stays available as the tooltip.
import type { Diagnostic } from '../../client/types.ts';
import type { BusinessObject, DiagramElement, ElementRegistry, Modeling } from '../diagram-services.ts';

export interface ProblemFix {
  label: string;
  apply(): void;
}

export interface ExplainedProblem {
  /** the element's name, or its kind and id when it has none */
  subject: string;
  text: string;
  fix?: ProblemFix;
}

interface BpmnReplace {
  replaceElement(element: DiagramElement, target: { type: string }): DiagramElement;
}

interface ModdleModeling extends Modeling {
  updateModdleProperties(element: DiagramElement, target: BusinessObject, properties: Record<string, unknown>): void;
}

interface Selection {
  select(element: DiagramElement): void;
}

/** The panel field that holds a task's topic, per dialect (its entry id and label). */
const TOPIC_FIELD = {
  camunda7: { label: 'Topic', entry: 'externalTopic' },
  zeebe: { label: 'Job type', entry: 'taskDefinitionType' },
} as const;

function kindOf(bo: BusinessObject): string {
  return bo.$type
    .replace(/^bpmn:/, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();
}

export default class ProblemFixes {
  static $inject = ['elementRegistry', 'modeling', 'bpmnReplace', 'selection', 'injector'];
  private readonly zeebe: boolean;

  constructor(
    private readonly elementRegistry: ElementRegistry,
    private readonly modeling: ModdleModeling,
    private readonly bpmnReplace: BpmnReplace,
    private readonly selection: Selection,
    injector: { get(name: string, strict: boolean): unknown },
  ) {
    this.zeebe = Boolean(injector.get('zeebePropertiesProvider', false));
  }

  explain(problem: Diagnostic): ExplainedProblem {
    const element = this.elementRegistry.get(problem.elementId) as DiagramElement | undefined;
    const bo = element?.businessObject;
    const name = bo?.name?.trim();
    const subject = name ? `'${name}'` : bo ? `${kindOf(bo)} ${bo.id}` : problem.elementId;
    if (!element || !bo) return { subject, text: problem.message };

    if (/has no topic/.test(problem.message)) {
      const field = TOPIC_FIELD[this.zeebe ? 'zeebe' : 'camunda7'];
      return {
        subject,
        text: `Set ${field.label} for ${subject}: workers fetch its work by it`,
        fix: { label: `Set ${field.label.toLowerCase()}`, apply: () => this.focusField(element, field.entry) },
      };
    }
    if (bo.$type === 'bpmn:Task' && /is a plain task/.test(problem.message)) {
      return {
        subject,
        text: `${subject} is a plain task, which does nothing: make it a service task if a worker should do it`,
        fix: {
          label: 'Make it a service task',
          apply: () => this.selection.select(this.bpmnReplace.replaceElement(element, { type: 'bpmn:ServiceTask' })),
        },
      };
    }
    const condition = bo.conditionExpression as BusinessObject | undefined;
    const body = String(condition?.body ?? '').trim();
    if (condition && /is neither FEEL nor JUEL/.test(problem.message) && body && !body.startsWith('=')) {
      return {
        subject,
        text: `The condition of ${subject} needs "=" in front to be FEEL: = ${body}`,
        fix: {
          label: 'Add "="',
          apply: () => this.modeling.updateModdleProperties(element, condition, { body: `= ${body}` }),
        },
      };
    }
    return { subject, text: problem.message };
  }

  /** Selects the element and puts the cursor in a panel field, unfolding its group. */
  private focusField(element: DiagramElement, entryId: string): void {
    this.selection.select(element);
    const bo = element.businessObject;
    // A Camunda 7 task needs the external implementation before it shows the topic field.
    if (!this.zeebe && bo.get('camunda:type') !== 'external')
      this.modeling.updateProperties(element, { 'camunda:type': 'external' });
    // The panel draws the selection a frame later, and a folded group hides its fields.
    const focus = (tries: number): void => {
      const input = document.getElementById(`bio-properties-panel-${entryId}`);
      if (input?.offsetParent) return input.focus();
      input
        ?.closest('.bio-properties-panel-group')
        ?.querySelector<HTMLElement>('.bio-properties-panel-group-header:not(.open)')
        ?.click();
      if (tries > 0) requestAnimationFrame(() => focus(tries - 1));
    };
    requestAnimationFrame(() => focus(20));
  }
}
