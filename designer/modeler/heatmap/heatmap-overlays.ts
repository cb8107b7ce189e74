// Shows how many instances ran each element, shaded by share of the busiest element. A
// skipped step did not run (its branch was not taken: dead-path elimination records it as
// `skipped`), so it is not counted; how many skipped it shows in a muted badge of its own.
import type { Heatmap } from '../../client/types.ts';
import type { Canvas, ElementRegistry, Overlays } from '../diagram-services.ts';

const LEVELS = 5;

export default class HeatmapOverlays {
  static $inject = ['canvas', 'overlays', 'elementRegistry'];
  private marked: { id: string; marker: string }[] = [];

  constructor(
    private readonly canvas: Canvas,
    private readonly overlays: Overlays,
    private readonly elementRegistry: ElementRegistry,
  ) {}

  show(heatmap: Heatmap): void {
    this.clear();
    const counts = Object.entries(heatmap.elements).map(([id, byStatus]) => {
      const { skipped = 0, ...ran } = byStatus;
      return { id, byStatus, skipped, ran: Object.values(ran).reduce((a, b) => a + (b ?? 0), 0) };
    });
    const max = Math.max(1, ...counts.map((c) => c.ran));
    for (const { id, byStatus, skipped, ran } of counts) {
      if (!this.elementRegistry.get(id) || ran + skipped === 0) continue;
      // One row above the element, so the skips do not cover the element or its label.
      const row = document.createElement('div');
      row.className = 'baton-heat';
      row.title = Object.entries(byStatus)
        .map(([status, n]) => `${status}: ${n}`)
        .join('\n');
      if (ran > 0) {
        const marker = `baton-heat-${Math.max(1, Math.ceil((ran / max) * LEVELS))}`;
        this.canvas.addMarker(id, marker);
        this.marked.push({ id, marker });
        row.append(badge(id, 'baton-heat-badge', String(ran)));
      }
      if (skipped > 0) row.append(badge(id, 'baton-heat-skipped', `${skipped} skipped`));
      this.overlays.add(id, 'baton-heat', { position: { top: -12, left: -6 }, html: row });
    }
  }

  clear(): void {
    for (const { id, marker } of this.marked) if (this.elementRegistry.get(id)) this.canvas.removeMarker(id, marker);
    this.marked = [];
    this.overlays.remove({ type: 'baton-heat' });
  }
}

function badge(id: string, className: string, text: string): HTMLElement {
  const element = document.createElement('span');
  element.className = className;
  element.dataset.elementId = id;
  element.textContent = text;
  return element;
}
