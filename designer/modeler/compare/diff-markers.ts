// Compares the diagram on the canvas with a deployed version (bpmn-js-differ, over the two
// models) and marks what changed: added, changed, moved. Removed elements are not on the
// canvas; the caller lists them. Markers are view state: no command, nothing to undo.
import { diff } from 'bpmn-js-differ';
import type { BusinessObject, Canvas, ElementRegistry } from '../diagram-services.ts';

export type DiffKind = 'added' | 'changed' | 'moved';

export interface DiagramDiff {
  added: string[];
  changed: string[];
  moved: string[];
  /** names (or ids) of what the deployed version has and the canvas does not */
  removed: string[];
}

interface Moddle {
  fromXML(xml: string): Promise<{ rootElement: BusinessObject }>;
}

const MARKER: Record<DiffKind, string> = { added: 'baton-diff-added', changed: 'baton-diff-changed', moved: 'baton-diff-moved' };

export default class DiffMarkers {
  static $inject = ['canvas', 'elementRegistry', 'moddle', 'bpmnjs'];
  private marked: { id: string; marker: string }[] = [];

  constructor(
    private readonly canvas: Canvas,
    private readonly elementRegistry: ElementRegistry,
    private readonly moddle: Moddle,
    private readonly bpmnjs: { getDefinitions(): BusinessObject },
  ) {}

  /** What differs between the deployed XML and the canvas. */
  async diffAgainst(deployedXml: string): Promise<DiagramDiff> {
    const { rootElement } = await this.moddle.fromXML(deployedXml);
    const changes = diff(rootElement, this.bpmnjs.getDefinitions());
    return {
      added: Object.keys(changes._added),
      changed: Object.keys(changes._changed),
      // Moved only: an element that also changed is marked changed.
      moved: Object.keys(changes._layoutChanged).filter((id) => !(id in changes._changed) && !(id in changes._added)),
      removed: Object.values(changes._removed).map((e) => String(e.name || e.id)),
    };
  }

  /** Replaces the marks with those of a diff; ids not on the canvas are skipped. */
  show(result: DiagramDiff): void {
    this.clear();
    for (const kind of ['added', 'changed', 'moved'] as const) {
      for (const id of result[kind]) {
        if (!this.elementRegistry.get(id)) continue;
        this.canvas.addMarker(id, MARKER[kind]);
        this.marked.push({ id, marker: MARKER[kind] });
      }
    }
  }

  clear(): void {
    for (const { id, marker } of this.marked) if (this.elementRegistry.get(id)) this.canvas.removeMarker(id, marker);
    this.marked = [];
  }
}
