// Marks the elements that compile diagnostics name: a red or amber outline and a badge.
// Markers and overlays are view state, not model changes, so no command is involved.
import type { Diagnostic } from '../../client/types.ts';
import type { Canvas, ElementRegistry, Overlays } from '../diagram-services.ts';

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
      if (!this.elementRegistry.get(id)) continue;
      const severity = list.some((d) => d.severity === 'error') ? 'error' : 'warning';
      this.canvas.addMarker(id, MARKERS[severity]);
      this.marked.push({ id, marker: MARKERS[severity] });
      const badge = document.createElement('div');
      badge.className = `baton-lint-badge baton-lint-badge-${severity}`;
      badge.textContent = String(list.length);
      badge.title = list.map((d) => d.message).join('\n');
      badge.dataset.elementId = id;
      this.overlays.add(id, 'baton-lint', { position: { top: -8, right: 8 }, html: badge });
    }
  }

  clear(): void {
    for (const { id, marker } of this.marked) if (this.elementRegistry.get(id)) this.canvas.removeMarker(id, marker);
    this.marked = [];
    this.overlays.remove({ type: 'baton-lint' });
  }
}

function groupById(diagnostics: Diagnostic[]): Map<string, Diagnostic[]> {
  const groups = new Map<string, Diagnostic[]>();
  for (const d of diagnostics) groups.set(d.elementId, [...(groups.get(d.elementId) ?? []), d]);
  return groups;
}
