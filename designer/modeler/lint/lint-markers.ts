// Marks the elements that compile diagnostics name: a red or amber outline and a badge.
// Markers and overlays are view state, not model changes, so no command is involved.
import type { Diagnostic } from '../../client/types.ts';
import type { Canvas, DiagramElement, ElementRegistry, Overlays } from '../diagram-services.ts';

type Point = { x: number; y: number };

const MARKERS = { error: 'baton-lint-error', warning: 'baton-lint-warning' } as const;

export default class LintMarkers {
  static $inject = ['canvas', 'overlays', 'elementRegistry'];
  private marked: { id: string; marker: string }[] = [];

  constructor(
    private readonly canvas: Canvas,
    private readonly overlays: Overlays,
    private readonly elementRegistry: ElementRegistry,
  ) {}

  /** Replaces the marks with those of the given diagnostics; ids not on the canvas are skipped. */
  show(diagnostics: Diagnostic[]): void {
    this.clear();
    for (const [id, list] of groupById(diagnostics)) {
      const element = this.elementRegistry.get(id) as unknown as DiagramElement | undefined;
      if (!element) continue;
      const severity = list.some((d) => d.severity === 'error') ? 'error' : 'warning';
      this.canvas.addMarker(id, MARKERS[severity]);
      this.marked.push({ id, marker: MARKERS[severity] });
      const badge = document.createElement('div');
      badge.className = `baton-lint-badge baton-lint-badge-${severity}`;
      badge.textContent = String(list.length);
      badge.title = list.map((d) => d.message).join('\n');
      badge.dataset.elementId = id;
      const onFlow = flowBadgePosition(element.waypoints as Point[] | undefined);
      if (onFlow) badge.classList.add('baton-lint-badge-on-flow');
      this.overlays.add(id, 'baton-lint', { position: onFlow ?? { top: -8, right: 8 }, html: badge });
    }
  }

  clear(): void {
    for (const { id, marker } of this.marked) if (this.elementRegistry.get(id)) this.canvas.removeMarker(id, marker);
    this.marked = [];
    this.overlays.remove({ type: 'baton-lint' });
  }
}

/**
 * A connection's badge goes on the flow itself: the top-right of its bounding box is
 * usually on some other element. The point is the middle of the middle segment, where
 * bpmn-js puts a flow's label (getWaypointsMid); overlays of a connection are placed
 * relative to the top-left of its waypoints' bounding box, and CSS centers the badge.
 */
function flowBadgePosition(waypoints: Point[] | undefined): { left: number; top: number } | undefined {
  if (!waypoints || waypoints.length < 2) return undefined;
  const mid = waypoints.length / 2 - 1;
  const first = waypoints[Math.floor(mid)]!;
  const second = waypoints[Math.ceil(mid + 0.01)]!;
  const left = Math.min(...waypoints.map((p) => p.x));
  const top = Math.min(...waypoints.map((p) => p.y));
  return { left: (first.x + second.x) / 2 - left, top: (first.y + second.y) / 2 - top };
}

function groupById(diagnostics: Diagnostic[]): Map<string, Diagnostic[]> {
  const groups = new Map<string, Diagnostic[]>();
  for (const d of diagnostics) groups.set(d.elementId, [...(groups.get(d.elementId) ?? []), d]);
  return groups;
}
