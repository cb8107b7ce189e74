import type { Diagnostic } from './plan.ts';

export function errorAt(elementId: string, message: string): Diagnostic {
  return { elementId, message, severity: 'error' };
}

export function warningAt(elementId: string, message: string): Diagnostic {
  return { elementId, message, severity: 'warning' };
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === 'error');
}
