// Modules without their own type declarations.
declare module 'diagram-js-minimap' {
  const module: Record<string, unknown>;
  export default module;
}
declare module 'camunda-bpmn-moddle/resources/camunda.json' {
  const descriptor: Record<string, unknown>;
  export default descriptor;
}
