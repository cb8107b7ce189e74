// Modules without their own type declarations.
declare module 'diagram-js-minimap' {
  const module: Record<string, unknown>;
  export default module;
}
declare module 'camunda-bpmn-moddle/resources/camunda.json' {
  const descriptor: Record<string, unknown>;
  export default descriptor;
}
declare module 'zeebe-bpmn-moddle/resources/zeebe.json' {
  const descriptor: Record<string, unknown>;
  export default descriptor;
}
// The bpmn.io properties panel ships no declarations; the designer uses a few of its exports.
declare module 'bpmn-js-properties-panel' {
  export const BpmnPropertiesPanelModule: Record<string, unknown>;
  export const BpmnPropertiesProviderModule: Record<string, unknown>;
  export const CamundaPlatformPropertiesProviderModule: Record<string, unknown>;
  export const ZeebePropertiesProviderModule: Record<string, unknown>;
  export function useService(name: string): unknown;
}
declare module '@bpmn-io/properties-panel' {
  import type { FunctionComponent } from '@bpmn-io/properties-panel/preact';
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  export const TextFieldEntry: FunctionComponent<any>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  export const SelectEntry: FunctionComponent<any>;
  export function isTextFieldEntryEdited(node: unknown): boolean;
  export function isSelectEntryEdited(node: unknown): boolean;
}
declare module 'camunda-bpmn-js-behaviors/lib/camunda-platform' {
  const module: Record<string, unknown>;
  export default module;
}
declare module 'camunda-bpmn-js-behaviors/lib/camunda-cloud' {
  const module: Record<string, unknown>;
  export default module;
}
declare module 'bpmn-js-token-simulation/lib/modeler' {
  const module: Record<string, unknown>;
  export default module;
}
declare module 'bpmn-js-differ' {
  interface Changed {
    model: { id: string; name?: string };
    attrs: Record<string, { oldValue: unknown; newValue: unknown }>;
  }
  export function diff(
    oldDefinitions: unknown,
    newDefinitions: unknown,
  ): {
    _added: Record<string, { id: string; name?: string }>;
    _removed: Record<string, { id: string; name?: string }>;
    _changed: Record<string, Changed>;
    _layoutChanged: Record<string, { id: string; name?: string }>;
  };
}
declare module 'bpmn-js-element-templates' {
  export const ElementTemplatesPropertiesProviderModule: Record<string, unknown>;
  export const CloudElementTemplatesPropertiesProviderModule: Record<string, unknown>;
}
declare module '@bpmn-io/element-template-chooser' {
  const module: Record<string, unknown>;
  export default module;
}
declare module 'bpmn-auto-layout' {
  /** The XML with a generated BPMNDiagram for its (first) process. */
  export function layoutProcess(xml: string): Promise<string>;
}
declare module 'bpmn-moddle' {
  // auto-layout.ts types the few methods it calls
  export class BpmnModdle {}
}
