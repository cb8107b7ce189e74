// Lays out a file that has no diagram interchange for its process, before bpmn-js imports it.
//
// Generated files (and Baton's own test files) often carry only the process: bpmn-js then draws
// an empty canvas. bpmn-auto-layout places every flow node and sequence flow; a file that
// draws its process is left as it is, so an analyst's layout is never replaced.
//
// What bpmn-auto-layout 1.3.0 leaves out, and what this module does about it:
// - subprocesses come out collapsed, their content in the parent's plane; bpmn-js's
//   subprocess compatibility moves it to a drill-down plane on import, so it stays readable;
// - sequence flows inside an event subprocess, and associations (a compensation boundary's to
//   its handler), get no edge: completeLayout draws them straight, from the source's right
//   side to the target's left side;
// - a data object (not its reference) gets a shape bpmn-js cannot render: it is dropped;
// - text annotations (and so their associations), groups, lanes, message flows and every
//   participant but the first are not drawn: they are returned in notDrawn so the editor can
//   say so.
import { BpmnModdle } from 'bpmn-moddle';
import { layoutProcess } from 'bpmn-auto-layout';

export interface LayoutResult {
  xml: string;
  /** true when the XML had no layout for its process and this one was generated */
  laidOut: boolean;
  /** ids of elements the generated layout does not draw */
  notDrawn: string[];
}

// moddle elements are dynamic objects; only the few properties read here are typed
interface ModdleElement {
  id?: string;
  $type: string;
  $attrs?: Record<string, string>;
  bpmnElement?: ModdleElement;
  sourceRef?: ModdleElement;
  targetRef?: ModdleElement;
  bounds?: { x: number; y: number; width: number; height: number };
  flowElements?: ModdleElement[];
  artifacts?: ModdleElement[];
  laneSets?: { lanes?: ModdleElement[] }[];
  rootElements?: ModdleElement[];
  diagrams?: { plane?: ModdleElement & { planeElement?: ModdleElement[] } }[];
  participants?: ModdleElement[];
  messageFlows?: ModdleElement[];
  processRef?: ModdleElement;
  waypoint?: unknown[];
}

// bpmn-moddle's own types differ between the designer's and the tests' module resolution
interface Moddle {
  fromXML(xml: string): Promise<{ rootElement: unknown }>;
  toXML(element: unknown, options?: { format?: boolean }): Promise<{ xml: string }>;
  create(type: string, attrs?: Record<string, unknown>): unknown;
}

/** The XML as it is when it draws its process, else with a generated layout. */
export async function layoutWhenMissing(xml: string): Promise<LayoutResult> {
  const moddle = new BpmnModdle() as unknown as Moddle;
  let definitions: ModdleElement;
  try {
    definitions = (await moddle.fromXML(xml)).rootElement as unknown as ModdleElement;
  } catch {
    // bpmn-js's own import reports what is wrong with the file
    return { xml, laidOut: false, notDrawn: [] };
  }
  if (!lacksLayout(definitions)) return { xml, laidOut: false, notDrawn: [] };
  const generated = (await moddle.fromXML(await layoutProcess(xml))).rootElement as unknown as ModdleElement;
  const notDrawn = completeLayout(moddle, generated);
  const { xml: laidOutXml } = await moddle.toXML(generated, { format: true });
  return { xml: laidOutXml, laidOut: true, notDrawn };
}

function drawnIds(definitions: ModdleElement): Set<string> {
  const ids = new Set<string>();
  for (const diagram of definitions.diagrams ?? []) {
    for (const di of diagram.plane?.planeElement ?? []) if (di.bpmnElement?.id) ids.add(di.bpmnElement.id);
  }
  return ids;
}

/** No process draws any of its flow elements, and no participant is drawn either. */
function lacksLayout(definitions: ModdleElement): boolean {
  const drawn = drawnIds(definitions);
  const roots = definitions.rootElements ?? [];
  const processes = roots.filter((r) => r.$type === 'bpmn:Process' && (r.flowElements ?? []).length > 0);
  if (processes.length === 0) return false;
  const participantDrawn = roots.some((r) => (r.participants ?? []).some((p) => p.id && drawn.has(p.id)));
  return !participantDrawn && processes.every((p) => !(p.flowElements ?? []).some((e) => e.id && drawn.has(e.id)));
}

/** Fixes what the generated layout gets wrong and returns the ids it still does not draw. */
function completeLayout(moddle: Moddle, definitions: ModdleElement): string[] {
  const plane = definitions.diagrams?.[0]?.plane;
  if (!plane) return [];
  plane.planeElement = (plane.planeElement ?? []).filter((di) => di.bpmnElement?.$type !== 'bpmn:DataObject');
  const shapes = new Map(plane.planeElement.flatMap((di) => (di.bounds && di.bpmnElement?.id ? [[di.bpmnElement.id, di]] : [])));
  const drawn = drawnIds(definitions);
  const notDrawn: string[] = [];
  for (const element of visualElements(definitions)) {
    if (!element.id || drawn.has(element.id)) continue;
    const from = element.sourceRef?.id ? shapes.get(element.sourceRef.id)?.bounds : undefined;
    const to = element.targetRef?.id ? shapes.get(element.targetRef.id)?.bounds : undefined;
    if ((element.$type === 'bpmn:SequenceFlow' || element.$type === 'bpmn:Association') && from && to) {
      const point = (x: number, y: number) => moddle.create('dc:Point', { x, y });
      const waypoint = [point(from.x + from.width, from.y + from.height / 2), point(to.x, to.y + to.height / 2)];
      plane.planeElement.push(
        moddle.create('bpmndi:BPMNEdge', { id: `${element.id}_di`, bpmnElement: element, waypoint }) as ModdleElement,
      );
    } else notDrawn.push(element.id);
  }
  return notDrawn;
}

/** Every element bpmn-js would draw: flow elements at any depth, artifacts, lanes, participants, message flows. */
function visualElements(definitions: ModdleElement): ModdleElement[] {
  const found: ModdleElement[] = [];
  const walk = (scope: ModdleElement): void => {
    for (const e of scope.flowElements ?? []) {
      if (e.$type === 'bpmn:DataObject') continue;
      found.push(e);
      walk(e);
    }
    found.push(...(scope.artifacts ?? []));
    for (const set of scope.laneSets ?? []) found.push(...(set.lanes ?? []));
  };
  for (const root of definitions.rootElements ?? []) {
    if (root.$type === 'bpmn:Process') walk(root);
    if (root.$type === 'bpmn:Collaboration') found.push(...(root.participants ?? []), ...(root.messageFlows ?? []));
  }
  return found;
}

/** What the editor says once after laying a file out. */
export function layoutNotice(notDrawn: string[]): string {
  const missing = notDrawn.length > 0 ? ` Not drawn by the layout: ${notDrawn.join(', ')}.` : '';
  return `The file has no diagram layout: it was laid out automatically; save to keep the layout.${missing}`;
}
