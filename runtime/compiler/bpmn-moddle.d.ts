// bpmn-moddle 10 ships types for its model (bpmn-moddle/types) but not for its
// entry point; this declares the part of it the compiler calls.
declare module 'bpmn-moddle' {
  export interface ModdleWarning {
    message: string;
    /** the element holding an unresolved reference or unknown attribute */
    element?: { id?: string; $type?: string };
    /** e.g. "bpmn:targetRef" or "camunda:foo" */
    property?: string;
    value?: unknown;
    /** the nested parser error for unparsable content */
    error?: Error;
  }

  export interface ParseResult {
    rootElement: unknown;
    warnings: ModdleWarning[];
    elementsById: Record<string, unknown>;
  }

  export class BpmnModdle {
    constructor(packages?: Record<string, unknown>, options?: Record<string, unknown>);
    fromXML(xml: string, options?: Record<string, unknown>): Promise<ParseResult>;
  }
}
