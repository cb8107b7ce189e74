// Deploy's refusal messages grouped by what Baton would have to offer to run the element
// (element kind + gist), so the corpus counts say what to build next.
const REASONS: [RegExp, string | ((m: RegExpExecArray) => string)][] = [
  [/^Unsupported element (bpmn:\w+)(?: with (bpmn:\w+))?/, (m) => `${m[1]}${m[2] ? ` with ${m[2]}` : ''}: not run`],
  [
    /^Execution listener on .* (?:inside Camunda 7's engine|runs a \w+ script, which Baton does not run)/,
    'Camunda 7 execution listener (Java, expression or script)',
  ],
  [/runs Java code/, 'service task runs Java code (camunda:class, expression or delegateExpression)'],
  [/has no topic/, 'service task without camunda:topic or zeebe:taskDefinition type'],
  [/holds a JavaScript script inside a list or a map/, 'JavaScript parameter inside a list or a map'],
  [/is JavaScript that does not parse|its JavaScript does not parse/, 'JavaScript that does not parse'],
  [/^Condition of sequence flow \S+ cannot be used/, 'JUEL condition Baton cannot read'],
  [/must be attached to a task/, 'boundary event on an element that carries none (a transaction, an event)'],
  [/sits on .* which throws no escalations/, 'escalation boundary on a task'],
  [/a user task cannot loop:/, 'loop marker on a user task'],
  [/^User task .* is not a valid expression/, 'user task assignment with a JUEL method call'],
  [/has no step that waits/, 'loop with no step that waits'],
  [/^End event \S+ can receive flows .* at the same time/, 'end event two parallel paths reach at once'],
  [/^A pass of the loop .* back to .* and/, 'loop pass that could both repeat and leave'],
  [/which are never taken together/, 'parallel join of paths an exclusive choice separates'],
  [/has no start event/, 'process or subprocess without a start event'],
  [/has no incoming sequence flow/, 'element no sequence flow reaches'],
  [/has no (?:message|signal) with a name/, 'message or signal event without a named message or signal'],
  [/set camunda:collection/, 'multi-instance task without a collection or cardinality'],
  [/Baton does not run \w+ scripts|kept in the resource/, 'script task in another language or in a resource'],
  [/calledElementTenantId/, 'call activity with a tenant id'],
  [/is not readable BPMN XML/, 'file is not readable BPMN XML'],
  [/isExecutable="false"/, 'no executable process'],
  [/already starts process/, 'message start name another process starts on'],
];

export function refusalReason(message: string): string {
  for (const [pattern, reason] of REASONS) {
    const m = pattern.exec(message);
    if (m) return typeof reason === 'string' ? reason : reason(m);
  }
  return `other: ${message.slice(0, 100)}`;
}
