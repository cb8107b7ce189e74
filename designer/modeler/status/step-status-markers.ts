// Colors each element of an instance's diagram by its step status, with a small badge
// for what needs attention (active, incident) and the attempt count; marks the sequence
// flows the instance took, and those it skipped, so the path it ran can be read.
import type { FlowState, Incident, OpenTask, StepState } from '../../client/types.ts';
import type { Canvas, DiagramElement, ElementRegistry, Overlays } from '../diagram-services.ts';

export const STEP_MARKERS: Record<StepState['status'], string> = {
  active: 'baton-step-active',
  completed: 'baton-step-completed',
  skipped: 'baton-step-skipped',
  incident: 'baton-step-incident',
  canceled: 'baton-step-canceled',
};

/** Loop steps are named `loop:<id of the step each pass starts at>` (docs/scopes.md, "Loops"). */
const LOOP_PREFIX = 'loop:';

export const FLOW_MARKERS: Record<FlowState['state'], string> = {
  taken: 'baton-flow-taken',
  skipped: 'baton-flow-skipped',
};

export interface StepMarks {
  steps: StepState[];
  flows: FlowState[];
  tasks: OpenTask[];
  incidents: Incident[];
}

export default class StepStatusMarkers {
  static $inject = ['canvas', 'overlays', 'elementRegistry'];
  private marked = new Map<string, string>();

  constructor(
    private readonly canvas: Canvas,
    private readonly overlays: Overlays,
    private readonly elementRegistry: ElementRegistry,
  ) {}

  show({ steps, flows, tasks, incidents }: StepMarks): void {
    this.overlays.remove({ type: 'baton-step' });
    // A status this designer does not know yet (e.g. compensated) still gets a marker by name.
    const marks: [string, string][] = [
      ...steps.map((s): [string, string] => [s.stepId, STEP_MARKERS[s.status] ?? `baton-step-${s.status}`]),
      ...flows.map((f): [string, string] => [f.flowId, FLOW_MARKERS[f.state]]),
    ];
    const next = new Map(marks.filter(([id]) => this.elementRegistry.get(id)));
    for (const [id, marker] of this.marked) if (next.get(id) !== marker) this.canvas.removeMarker(id, marker);
    for (const [id, marker] of next) if (this.marked.get(id) !== marker) this.canvas.addMarker(id, marker);
    this.marked = next;
    for (const step of steps) {
      if (!this.elementRegistry.get(step.stepId)) continue;
      const element = this.elementRegistry.get(step.stepId) as unknown as DiagramElement;
      const label = badgeLabel(
        step,
        tasks.find((t) => t.stepId === step.stepId),
        incidents.some((i) => i.stepId === step.stepId),
        waitsFor(element),
      );
      if (label) this.addBadge(step.stepId, label, step.status);
    }
    // A loop step is no element of the diagram: its pass shows on the step every pass starts at.
    for (const loop of steps) {
      const head = loop.stepId.startsWith(LOOP_PREFIX) ? loop.stepId.slice(LOOP_PREFIX.length) : undefined;
      if (head === undefined || loop.pass === undefined || !this.elementRegistry.get(head)) continue;
      const text = loop.status === 'active' ? `pass ${loop.pass}` : `${loop.pass} ${loop.pass === 1 ? 'pass' : 'passes'}`;
      this.addBadge(head, text, 'loop', { top: -12, right: 12 });
    }
    // A repeating boundary or a non-interrupting event subprocess counts its firings on its own row.
    for (const fired of steps) {
      if (fired.stepId.startsWith(LOOP_PREFIX) || !fired.pass || !this.elementRegistry.get(fired.stepId)) continue;
      this.addBadge(fired.stepId, `fired ${fired.pass}×`, 'loop', { top: -12, right: 12 });
    }
  }

  private addBadge(id: string, label: string, status: string, position: object = { bottom: 4, left: -6 }): void {
    const badge = document.createElement('div');
    badge.className = `baton-step-badge baton-step-badge-${status}`;
    badge.textContent = label;
    this.overlays.add(id, 'baton-step', { position, html: badge });
  }
}

/** What an active event waits for, from its event definition: "timer", "message", ... */
function waitsFor(element: DiagramElement): string | undefined {
  const definition = (element.businessObject.eventDefinitions as { $type: string }[] | undefined)?.[0];
  return definition?.$type.replace(/^bpmn:(\w+)EventDefinition$/, '$1').toLowerCase();
}

function badgeLabel(step: StepState, task: OpenTask | undefined, incident: boolean, waiting: string | undefined): string {
  if (incident) return 'incident';
  if (step.status !== 'active') return step.attempts > 1 ? `${step.attempts} attempts` : '';
  if (waiting) return `waiting on ${waiting}`;
  if (!task) return 'active';
  if (task.state === 'locked') return `locked by ${task.workerId ?? '?'}`;
  if (task.retryAt && Date.parse(task.retryAt) > Date.now()) return `retry (attempt ${task.attempt + 1})`;
  return 'waiting for a worker';
}
