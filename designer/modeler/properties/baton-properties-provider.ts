// Adds a "Baton" group to the bpmn.io properties panel for the attributes only Baton reads
// (docs/designer.md): retries and what happens when they run out on a service task, the
// correlation key of a message catch, and where a multi-instance task collects its results.
// Everything else (topics, conditions, timers, messages, mappings) is edited by the dialect's
// own provider; what of it Baton does not run is flagged by lint, not hidden here.
import { isSelectEntryEdited, isTextFieldEntryEdited, SelectEntry, TextFieldEntry } from '@bpmn-io/properties-panel';
import { h } from '@bpmn-io/properties-panel/preact';
import { useService } from 'bpmn-js-properties-panel';
import type { BusinessObject, DiagramElement, Modeling } from '../diagram-services.ts';

/** Drawn after the dialect's groups. */
const LOW_PRIORITY = 400;

interface PanelEntry {
  id: string;
  element: DiagramElement;
  component: (props: EntryProps) => unknown;
  isEdited: (node: unknown) => boolean;
}

interface PanelGroup {
  id: string;
  label: string;
  entries: PanelEntry[];
}

interface EntryProps {
  element: DiagramElement;
  id: string;
}

interface PropertiesPanel {
  registerProvider(
    priority: number,
    provider: { getGroups(element: DiagramElement): (groups: PanelGroup[]) => PanelGroup[] },
  ): void;
}

interface ModdleModeling extends Modeling {
  updateModdleProperties(element: DiagramElement, target: BusinessObject, properties: Record<string, unknown>): void;
}

type Translate = (text: string) => string;

/** A text attribute of the element's business object, or of the object `target` picks from it. */
function attributeEntry(options: {
  attribute: string;
  label: string;
  description: string;
  target?: (element: DiagramElement) => BusinessObject;
}) {
  return function AttributeEntry({ element, id }: EntryProps) {
    const modeling = useService('modeling') as ModdleModeling;
    const translate = useService('translate') as Translate;
    const debounce = useService('debounceInput');
    const target = options.target?.(element) ?? element.businessObject;
    return h(TextFieldEntry, {
      element,
      id,
      label: translate(options.label),
      description: translate(options.description),
      debounce,
      getValue: () => String(target.get(options.attribute) ?? ''),
      setValue: (value: string) =>
        modeling.updateModdleProperties(element, target, { [options.attribute]: value.trim() || undefined }),
    });
  };
}

const RetriesEntry = attributeEntry({
  attribute: 'baton:retries',
  label: 'Retries',
  description: 'Retries after the first failure; empty: 3',
});

const OutputCollectionEntry = attributeEntry({
  attribute: 'baton:outputCollection',
  label: 'Output collection',
  description: 'The list variable that collects each instance’s result',
  target: (element) => element.businessObject.loopCharacteristics as BusinessObject,
});

const OutputElementEntry = attributeEntry({
  attribute: 'baton:outputElement',
  label: 'Output element',
  description: 'FEEL over one instance’s variables, e.g. = result',
  target: (element) => element.businessObject.loopCharacteristics as BusinessObject,
});

const CorrelationKeyEntry = attributeEntry({
  attribute: 'baton:correlationKey',
  label: 'Correlation key',
  description: 'FEEL, e.g. = orderId; empty: the business key',
});

function OnExhaustedEntry({ element, id }: EntryProps) {
  const modeling = useService('modeling') as ModdleModeling;
  const translate = useService('translate') as Translate;
  return h(SelectEntry, {
    element,
    id,
    label: translate('When retries run out'),
    getValue: () => String(element.businessObject.get('baton:onExhausted') ?? ''),
    setValue: (value: string) =>
      modeling.updateModdleProperties(element, element.businessObject, { 'baton:onExhausted': value || undefined }),
    getOptions: () => [
      { value: '', label: translate('Raise an incident') },
      { value: 'compensate', label: translate('Compensate the completed steps') },
    ],
  });
}

function isType(bo: BusinessObject, type: string): boolean {
  return (bo as unknown as { $instanceOf(t: string): boolean }).$instanceOf(type);
}

function catchesMessage(bo: BusinessObject): boolean {
  if (isType(bo, 'bpmn:ReceiveTask')) return true;
  if (!isType(bo, 'bpmn:CatchEvent')) return false;
  const definitions = (bo.eventDefinitions as BusinessObject[] | undefined) ?? [];
  return definitions.some((d) => d.$type === 'bpmn:MessageEventDefinition');
}

export default class BatonPropertiesProvider {
  static $inject = ['propertiesPanel', 'injector'];

  private readonly zeebe: boolean;

  constructor(propertiesPanel: PropertiesPanel, injector: { get(name: string, strict: boolean): unknown }) {
    // The Zeebe provider edits retries on zeebe:taskDefinition itself.
    this.zeebe = Boolean(injector.get('zeebePropertiesProvider', false));
    propertiesPanel.registerProvider(LOW_PRIORITY, this);
  }

  getGroups(element: DiagramElement): (groups: PanelGroup[]) => PanelGroup[] {
    return (groups) => {
      const entries = this.entries(element);
      if (entries.length > 0) groups.push({ id: 'baton', label: 'Baton', entries });
      return groups;
    };
  }

  private entries(element: DiagramElement): PanelEntry[] {
    const bo = element.businessObject;
    const entries: PanelEntry[] = [];
    const text = (id: string, component: PanelEntry['component']) =>
      entries.push({ id, element, component, isEdited: isTextFieldEntryEdited });
    if (bo.$type === 'bpmn:ServiceTask') {
      if (!this.zeebe) text('batonRetries', RetriesEntry);
      entries.push({ id: 'batonOnExhausted', element, component: OnExhaustedEntry, isEdited: isSelectEntryEdited });
      const loop = bo.loopCharacteristics as BusinessObject | undefined;
      if (loop?.$type === 'bpmn:MultiInstanceLoopCharacteristics') {
        text('batonOutputCollection', OutputCollectionEntry);
        text('batonOutputElement', OutputElementEntry);
      }
    }
    if (catchesMessage(bo)) text('batonCorrelationKey', CorrelationKeyEntry);
    return entries;
  }
}
