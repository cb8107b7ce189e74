// @bpmn-io/element-templates-validator ships no types; this declares the part the engine calls.
declare module '@bpmn-io/element-templates-validator' {
  export interface TemplateValidationError {
    /** JSON pointer into the template, '' for the template itself */
    instancePath: string;
    schemaPath: string;
    keyword: string;
    message?: string;
    params?: Record<string, unknown>;
  }

  export interface TemplateValidationResult {
    valid: boolean;
    errors?: TemplateValidationError[] | null;
    warnings?: TemplateValidationError[] | null;
  }

  /** against the Camunda 7 element-template schema */
  export function validate(template: object): TemplateValidationResult;
  /** against the Zeebe element-template schema */
  export function validateZeebe(template: object): TemplateValidationResult;
  export function getSchemaVersion(): string;
  export function getZeebeSchemaVersion(): string;
}
