// Which element kinds the generated layout draws, what it completes, and that a file with
// its own layout is left as it is.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { layoutWhenMissing } from '../../../designer/modeler/auto-layout.ts';
import { buildBpmn, inlineDefinitions, singleTaskBpmn } from '../../support/bpmn.ts';

const drawn = (xml: string): string[] =>
  [...xml.matchAll(/<bpmndi:BPMN(?:Shape|Edge) [^>]*bpmnElement="([^"]+)"/g)].map((m) => m[1]!);

describe('layoutWhenMissing', () => {
  it('given a file with its own layout, then it returns the XML unchanged', async () => {
    const xml = await readFile(path.resolve('samples/order.bpmn'), 'utf8');
    await expect(layoutWhenMissing(xml)).resolves.toEqual({ xml, laidOut: false, notDrawn: [] });
  });

  it('given a file that does not parse, then it leaves the error to the import', async () => {
    await expect(layoutWhenMissing('<bpmn:definitions')).resolves.toMatchObject({ laidOut: false });
  });

  it('given a single task without layout, then every element is drawn', async () => {
    const result = await layoutWhenMissing(singleTaskBpmn('one', 'work'));
    expect(result.laidOut).toBe(true);
    expect(result.notDrawn).toEqual([]);
    expect(drawn(result.xml).sort()).toEqual(['Flow_1', 'Flow_2', 'end', 'start', 'work']);
  });

  it('given boundary events, a subprocess, an event-based gateway and compensation, then each is drawn, the compensation association too', async () => {
    const xml = buildBpmn(
      'kinds',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'a', type: 'serviceTask', topic: 'a' },
        { id: 'late', type: 'boundaryEvent', attachedTo: 'a', timer: { duration: 'PT1M' } },
        { id: 'cb', type: 'compensationBoundary', attachedTo: 'a', handler: 'undo' },
        { id: 'undo', type: 'serviceTask', topic: 'undo', forCompensation: true },
        {
          id: 'sub',
          type: 'subProcess',
          nodes: [
            { id: 'subStart', type: 'startEvent' },
            { id: 'subEnd', type: 'endEvent' },
          ],
          flows: [{ from: 'subStart', to: 'subEnd' }],
        },
        { id: 'gw', type: 'eventBasedGateway' },
        { id: 'msg', type: 'catchEvent', message: 'm' },
        { id: 'wait', type: 'catchEvent', timer: { duration: 'PT1M' } },
        { id: 'end', type: 'endEvent' },
        { id: 'lateEnd', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'a' },
        { from: 'a', to: 'sub' },
        { from: 'sub', to: 'gw' },
        { from: 'gw', to: 'msg' },
        { from: 'gw', to: 'wait' },
        { from: 'msg', to: 'end' },
        { from: 'wait', to: 'end' },
        { from: 'late', to: 'lateEnd' },
      ],
    );
    const result = await layoutWhenMissing(xml);
    expect(result.notDrawn).toEqual([]);
    expect(drawn(result.xml)).toEqual(
      expect.arrayContaining(['late', 'cb', 'cb_assoc', 'undo', 'sub', 'subStart', 'subEnd', 'sub_Flow_1', 'gw', 'msg', 'wait']),
    );
  });

  it('given an event subprocess, then its flows get edges bpmn-auto-layout leaves out; a text annotation is named as not drawn', async () => {
    const xml = inlineDefinitions('with-esp', [
      '<bpmn:startEvent id="s" /><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e" /><bpmn:endEvent id="e" />',
      '<bpmn:subProcess id="esp" triggeredByEvent="true"><bpmn:startEvent id="es"><bpmn:messageEventDefinition /></bpmn:startEvent><bpmn:sequenceFlow id="ef" sourceRef="es" targetRef="ee" /><bpmn:endEvent id="ee" /></bpmn:subProcess>',
      '<bpmn:textAnnotation id="note" /><bpmn:association id="noteOf" sourceRef="s" targetRef="note" />',
      '<bpmn:dataObjectReference id="ref" dataObjectRef="data" /><bpmn:dataObject id="data" />',
    ]);
    const result = await layoutWhenMissing(xml);
    expect(drawn(result.xml)).toEqual(expect.arrayContaining(['esp', 'es', 'ee', 'ef', 'ref']));
    // A data object has no shape of its own (its reference has one).
    expect(drawn(result.xml)).not.toContain('data');
    expect(result.notDrawn).toEqual(['note', 'noteOf']);
  });

  it("given a collaboration without layout, then the first participant's process is drawn and the rest is named", async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="D" targetNamespace="https://baton.dev/test">
  <bpmn:collaboration id="c"><bpmn:participant id="pa" processRef="a" /><bpmn:participant id="pb" processRef="b" /><bpmn:messageFlow id="mf" sourceRef="ta" targetRef="sb" /></bpmn:collaboration>
  <bpmn:process id="a" isExecutable="true"><bpmn:startEvent id="sa" /><bpmn:sequenceFlow id="fa" sourceRef="sa" targetRef="ta" /><bpmn:task id="ta" /></bpmn:process>
  <bpmn:process id="b"><bpmn:startEvent id="sb" /></bpmn:process>
</bpmn:definitions>`;
    const result = await layoutWhenMissing(xml);
    expect(drawn(result.xml).sort()).toEqual(['fa', 'sa', 'ta']);
    expect(result.notDrawn.sort()).toEqual(['mf', 'pa', 'pb', 'sb']);
  });
});
