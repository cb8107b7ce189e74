// Replace-menu entries (bpmn-js action names) for elements the server refuses wherever they stand
// (runtime/compiler/classify.ts, docs/events.md): transaction and ad-hoc subprocesses, complex
// gateways, cancel events and compensation starts of event subprocesses.
export const REFUSED_REPLACEMENTS: ReadonlySet<string> = new Set([
  'replace-with-transaction',
  'replace-with-ad-hoc-subprocess',
  'replace-with-collapsed-ad-hoc-subprocess',
  'replace-with-complex-gateway',
  'replace-with-cancel-boundary',
  'replace-with-cancel-end',
  'replace-with-compensation-start',
]);
