// Offers the workers' element templates in a task's replace menu (the wrench of the context
// pad), beside the plain types: choosing one turns the element into a service task and applies
// the template, which fills its topic and mappings. The properties panel's "Template" group and
// the template chooser do the same for a task already selected.
import type { BusinessObject, DiagramElement } from '../diagram-services.ts';

export interface ElementTemplate {
  id: string;
  name: string;
  version?: number;
  description?: string;
  appliesTo: string[];
  elementType?: { value: string };
}

interface PopupMenu {
  registerProvider(id: string, priority: number, provider: unknown): void;
}

interface ElementTemplates {
  getAll(): ElementTemplate[];
  getLatest(): ElementTemplate[];
  applyTemplate(element: DiagramElement, template: ElementTemplate): DiagramElement;
}

interface BpmnReplace {
  replaceElement(element: DiagramElement, target: { type: string }): DiagramElement;
}

const TASK_TYPES = ['bpmn:Task', 'bpmn:ServiceTask', 'bpmn:SendTask', 'bpmn:BusinessRuleTask', 'bpmn:ScriptTask'];

function isA(bo: BusinessObject, type: string): boolean {
  return (bo as unknown as { $instanceOf(t: string): boolean }).$instanceOf(type);
}

export default class TemplateReplaceEntries {
  static $inject = ['popupMenu', 'elementTemplates', 'bpmnReplace', 'selection'];

  constructor(
    popupMenu: PopupMenu,
    private readonly elementTemplates: ElementTemplates,
    private readonly bpmnReplace: BpmnReplace,
    private readonly selection: { select(element: DiagramElement): void },
  ) {
    popupMenu.registerProvider('bpmn-replace', 900, this);
  }

  getPopupMenuEntries(element: DiagramElement): Record<string, unknown> {
    const bo = element.businessObject;
    if (!TASK_TYPES.includes(bo.$type)) return {};
    const entries: Record<string, unknown> = {};
    for (const template of this.elementTemplates.getLatest()) {
      // Templates for service tasks (what workers publish); a template for another type is left to the panel.
      if (!template.appliesTo.some((type) => type === 'bpmn:ServiceTask' || type === 'bpmn:Task')) continue;
      if (bo.get('camunda:modelerTemplate') === template.id || bo.get('zeebe:modelerTemplate') === template.id) continue;
      entries[`replace-with-template-${template.id}`] = {
        label: template.name,
        description: template.description ?? 'Element template of a worker',
        className: 'bpmn-icon-service-task',
        group: { id: 'templates', name: 'Worker templates' },
        action: () => this.apply(element, template),
      };
    }
    return entries;
  }

  private apply(element: DiagramElement, template: ElementTemplate): void {
    const target = isA(element.businessObject, 'bpmn:ServiceTask')
      ? element
      : this.bpmnReplace.replaceElement(element, { type: 'bpmn:ServiceTask' });
    this.selection.select(this.elementTemplates.applyTemplate(target, template) ?? target);
  }
}
