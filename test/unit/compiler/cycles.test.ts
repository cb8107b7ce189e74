import { describe, expect, it } from 'vitest';
import { findClosingFlows } from '../../../runtime/compiler/cycles.ts';
import type { GraphNode, ProcessGraph } from '../../../runtime/compiler/graph.ts';
import type { BpmnFlowNode, BpmnSequenceFlow } from '../../../runtime/compiler/model.ts';
import { compileDiagnostics, errorsOf, flow, processXml, readFixture, task } from './bpmn-helpers.ts';

/** A graph from "source>target" pairs; flow ids are "source>target". */
function graphOf(edges: string[], startId = 'S'): ProcessGraph {
  const nodes = new Map<string, GraphNode>();
  const node = (id: string): GraphNode => {
    const existing = nodes.get(id);
    if (existing) return existing;
    const $type = id === startId ? 'bpmn:StartEvent' : 'bpmn:ServiceTask';
    const created: GraphNode = {
      id,
      element: { $type, id, $instanceOf: () => true } as BpmnFlowNode,
      incoming: [],
      outgoing: [],
    };
    nodes.set(id, created);
    return created;
  };
  node(startId);
  const flows = edges.map((edge) => {
    const [source = '', target = ''] = edge.split('>');
    node(source).outgoing.push(edge);
    node(target).incoming.push(edge);
    return { id: edge, element: { $type: 'bpmn:SequenceFlow', id: edge } as BpmnSequenceFlow, source, target };
  });
  return { processId: 'p', nodes, flows };
}

describe('findClosingFlows', () => {
  it('finds nothing in a DAG with shared descendants', () => {
    expect(findClosingFlows(graphOf(['S>A', 'S>B', 'A>C', 'B>C', 'C>D', 'A>D']))).toEqual([]);
  });

  it('finds the flow that closes a loop, searching from the start event', () => {
    expect(findClosingFlows(graphOf(['S>A', 'A>B', 'B>C', 'C>A']))).toEqual(['C>A']);
  });

  it('finds a self loop', () => {
    expect(findClosingFlows(graphOf(['S>A', 'A>A']))).toEqual(['A>A']);
  });

  it('finds one closing flow per loop', () => {
    expect(findClosingFlows(graphOf(['S>A', 'A>B', 'B>A', 'B>C', 'C>D', 'D>C']))).toEqual(['B>A', 'D>C']);
  });

  it('finds loops that the start event cannot reach', () => {
    expect(findClosingFlows(graphOf(['S>A', 'X>Y', 'Y>X']))).toEqual(['Y>X']);
  });

  it('handles a very long chain without overflowing the stack', () => {
    const edges = ['S>n0', ...Array.from({ length: 100_000 }, (_, i) => `n${i}>n${i + 1}`), 'n100000>n0'];
    expect(findClosingFlows(graphOf(edges))).toEqual(['n100000>n0']);
  });
});

describe('checkCycles', () => {
  it('refuses the loop fixture, naming the closing flow', async () => {
    expect(await compileDiagnostics(readFixture('loop.bpmn'))).toEqual([
      {
        elementId: 'Flow_Again',
        severity: 'error',
        message:
          'Process loop loops: sequence flow Flow_Again leads back to an earlier step. Baton runs acyclic processes: remove the loop (repeat inside a worker, or start a new instance)',
      },
    ]);
  });

  it('names every closing flow in one diagnostic on the first', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:exclusiveGateway id="G1" />',
        task('A'),
        '<bpmn:exclusiveGateway id="G2" />',
        task('B'),
        flow('F1', 'S', 'G1'),
        flow('F2', 'G1', 'A'),
        flow('F3', 'A', 'G2'),
        flow('Back1', 'G2', 'G1', '${again}'),
        flow('F4', 'G2', 'B', '${!again}'),
        flow('Back2', 'B', 'A'),
      ].join('\n'),
    );
    const cycle = errorsOf(await compileDiagnostics(xml)).filter((e) => e.message.includes('loops'));
    expect(cycle).toEqual([
      expect.objectContaining({ elementId: 'Back1', message: expect.stringContaining('sequence flows Back1, Back2 lead back') }),
    ]);
  });

  it('finds loops that run through unsupported elements too', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:userTask id="U" />',
        task('T'),
        flow('F1', 'S', 'U'),
        flow('F2', 'U', 'T'),
        flow('F3', 'T', 'U'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml)).map((e) => e.elementId)).toEqual(['U', 'F3']);
  });
});
