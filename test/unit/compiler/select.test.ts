import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, readFixture } from './bpmn-helpers.ts';

const collaboration = readFixture('collaboration.bpmn');

describe('selectProcess', () => {
  it('asks to choose when several processes are executable, naming them', async () => {
    expect(await compileDiagnostics(collaboration)).toEqual([
      {
        elementId: 'Definitions_Collaboration',
        severity: 'error',
        message: 'File holds several processes (shop, warehouse): choose one by passing its id as processId',
      },
    ]);
  });

  it('compiles the process named by processId', async () => {
    expect((await compilePlan(collaboration, { processId: 'shop' })).plan.processKey).toBe('shop');
    // isExecutable left out counts as executable
    expect((await compilePlan(collaboration, { processId: 'warehouse' })).plan.steps.map((s) => s.id)).toEqual([
      'WarehouseStart',
      'Pick',
    ]);
  });

  it('refuses an unknown processId, listing the processes of the file', async () => {
    expect(await compileDiagnostics(collaboration, { processId: 'billing' })).toEqual([
      expect.objectContaining({
        elementId: 'Definitions_Collaboration',
        message: 'Process billing is not in this file (processes: shop, warehouse, draft): check the processId',
      }),
    ]);
  });

  it('refuses a processId naming a non-executable process', async () => {
    expect(await compileDiagnostics(collaboration, { processId: 'draft' })).toEqual([
      expect.objectContaining({ elementId: 'draft', message: expect.stringContaining('set isExecutable="true"') }),
    ]);
  });

  it('compiles the only executable process of a collaboration without being told', async () => {
    const single = collaboration.replace(
      '<bpmn:process id="warehouse" name="Warehouse">',
      '<bpmn:process id="warehouse" name="Warehouse" isExecutable="false">',
    );
    expect((await compilePlan(single)).plan.processKey).toBe('shop');
  });

  it('says when every process with elements is marked non-executable', async () => {
    const none = collaboration
      .replace(/isExecutable="true"/g, 'isExecutable="false"')
      .replace('name="Warehouse">', 'name="Warehouse" isExecutable="false">');
    expect(await compileDiagnostics(none)).toEqual([
      expect.objectContaining({
        elementId: 'shop',
        message:
          'No executable process: shop, warehouse, draft are marked isExecutable="false"; set isExecutable="true" on the process to deploy',
      }),
    ]);
  });

  it('says when the file holds no process at all', async () => {
    const xml = `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="Only_Collab" targetNamespace="x">
      <bpmn:collaboration id="C"><bpmn:participant id="P1" /></bpmn:collaboration></bpmn:definitions>`;
    expect(await compileDiagnostics(xml)).toEqual([
      expect.objectContaining({ elementId: 'Only_Collab', message: expect.stringContaining('no process with flow elements') }),
    ]);
  });

  it('uses "definitions" as element id when the definitions have no id', async () => {
    const xml = `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="x"></bpmn:definitions>`;
    expect((await compileDiagnostics(xml))[0]?.elementId).toBe('definitions');
  });
});
