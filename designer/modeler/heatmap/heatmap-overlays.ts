// Shows how many instances reached each element, shaded by share of the busiest element.
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
    const totals = Object.entries(heatmap.elements).map(([id, byStatus]) => ({
      id,
      byStatus,
      total: Object.values(byStatus).reduce((a, b) => a + (b ?? 0), 0),
    }));
    const max = Math.max(1, ...totals.map((t) => t.total));
    for (const { id, byStatus, total } of totals) {
      if (!this.elementRegistry.get(id) || total === 0) continue;
      const marker = `baton-heat-${Math.max(1, Math.ceil((total / max) * LEVELS))}`;
      this.canvas.addMarker(id, marker);
      this.marked.push({ id, marker });
      const badge = document.createElement('div');
      badge.className = 'baton-heat-badge';
      badge.dataset.elementId = id;
      badge.textContent = String(total);
      badge.title = Object.entries(byStatus)
        .map(([status, n]) => `${status}: ${n}`)
        .join('\n');
      this.overlays.add(id, 'baton-heat', { position: { top: -12, left: -6 }, html: badge });
    }
  }

  clear(): void {
    for (const { id, marker } of this.marked) if (this.elementRegistry.get(id)) this.canvas.removeMarker(id, marker);
    this.marked = [];
    this.overlays.remove({ type: 'baton-heat' });
  }
}
