// The few bpmn-js / diagram-js service shapes the designer uses, typed once.
import type Canvas from 'diagram-js/lib/core/Canvas';
import type ElementRegistry from 'diagram-js/lib/core/ElementRegistry';
import type EventBus from 'diagram-js/lib/core/EventBus';
import type Overlays from 'diagram-js/lib/features/overlays/Overlays';
import type Selection from 'diagram-js/lib/features/selection/Selection';

export type { Canvas, ElementRegistry, EventBus, Overlays, Selection };

/** A BPMN model object (moddle element) as bpmn-js hands it out. */
export interface BusinessObject {
  id: string;
  $type: string;
  name?: string;
  get(name: string): unknown;
  [key: string]: unknown;
}

/** A shape or connection on the canvas. */
export interface DiagramElement {
  id: string;
  type: string;
  businessObject: BusinessObject;
  source?: DiagramElement;
  target?: DiagramElement;
  waypoints?: unknown[];
  labelTarget?: DiagramElement;
}

export interface Moddle {
  create(type: string, attrs?: Record<string, unknown>): BusinessObject;
}

export interface Modeling {
  updateProperties(element: DiagramElement, properties: Record<string, unknown>): void;
}

/** What Modeler and NavigatedViewer have in common, as the designer uses it. */
export interface DiagramHost {
  get<T>(name: string): T;
  importXML(xml: string): Promise<{ warnings: unknown[] }>;
  saveXML(options?: { format?: boolean }): Promise<{ xml?: string }>;
  saveSVG(): Promise<{ svg: string }>;
  // diagram-js events carry a payload of their own shape per event name
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  on(event: string, callback: (e: any) => void): void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  off(event: string, callback: (e: any) => void): void;
  destroy(): void;
}
