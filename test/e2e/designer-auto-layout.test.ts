// A file without diagram layout is laid out on import (designer/modeler/auto-layout.ts) in the
// run views and the editor; a file with its own layout is shown as drawn.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, inlineDefinitions } from '../support/bpmn.ts';
import { deploy, start } from '../support/flows.ts';
import { openDesigner, SCREENSHOT_DIR, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const shape = (id: string, marker = '') => h.page.locator(`g.djs-element${marker}[data-element-id="${id}"]`);
const storedXml = async (id: string): Promise<string> => (await h.t.api.get(`/api/diagrams/${id}`)).body.xml as string;

describe('diagrams without layout', () => {
  it('given a process deployed without diagram interchange, then its instance view draws the task, its boundary event and the subprocess and marks the active task', async () => {
    const xml = buildBpmn(
      'no-di-run',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic: 'no-di-work' },
        { id: 'late', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: 'PT1H' } },
        {
          id: 'inner',
          type: 'subProcess',
          nodes: [
            { id: 'innerStart', type: 'startEvent' },
            { id: 'innerWork', type: 'serviceTask', topic: 'no-di-inner' },
            { id: 'innerEnd', type: 'endEvent' },
          ],
          flows: [
            { from: 'innerStart', to: 'innerWork' },
            { from: 'innerWork', to: 'innerEnd' },
          ],
        },
        { id: 'end', type: 'endEvent' },
        { id: 'lateEnd', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'work' },
        { from: 'work', to: 'inner' },
        { from: 'inner', to: 'end' },
        { from: 'late', to: 'lateEnd' },
      ],
    );
    expect(xml).not.toContain('BPMNDiagram');
    await deploy(h.t.api, xml);
    const id = await start(h.t.api, 'no-di-run');
    await h.page.goto(`${h.t.url}/#/instances/${id}`);

    await shape('work', '.baton-step-active').waitFor();
    await shape('start', '.baton-step-completed').waitFor();
    for (const drawn of ['late', 'inner', 'end', 'lateEnd']) await shape(drawn).waitFor();
    await shape('Flow_1').waitFor({ state: 'attached' });
    // The boundary event sits on its task's border (its box overlaps the task's), not apart from it.
    const task = (await shape('work').boundingBox())!;
    const boundary = (await shape('late').boundingBox())!;
    expect(boundary.x).toBeLessThan(task.x + task.width);
    expect(boundary.x + boundary.width).toBeGreaterThan(task.x);
    expect(boundary.y).toBeLessThan(task.y + task.height);
    expect(boundary.y + boundary.height).toBeGreaterThan(task.y + task.height / 2);
    await h.page.screenshot({ path: path.join(SCREENSHOT_DIR, 'auto-layout-instance.png') });
    expect(h.consoleErrors).toEqual([]);
  });

  it('given a draft without layout, when it opens in the editor, then its shapes are drawn, a notice says so once, and the stored XML changes only on Save', async () => {
    const xml = inlineDefinitions(
      'no-di-edit',
      [
        '<bpmn:startEvent id="s" />',
        '<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t" />',
        '<bpmn:serviceTask id="t" name="Check" camunda:type="external" camunda:topic="check" />',
        '<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e" />',
        '<bpmn:endEvent id="e" />',
        '<bpmn:subProcess id="esp" triggeredByEvent="true"><bpmn:startEvent id="es"><bpmn:messageEventDefinition messageRef="m" /></bpmn:startEvent><bpmn:sequenceFlow id="ef" sourceRef="es" targetRef="ee" /><bpmn:endEvent id="ee" /></bpmn:subProcess>',
        '<bpmn:textAnnotation id="note"><bpmn:text>why</bpmn:text></bpmn:textAnnotation>',
      ],
      '<bpmn:message id="m" name="cancel" />',
    );
    const created = await h.t.api.post('/api/diagrams', { name: 'Without layout', xml });
    expect(created.status).toBe(201);
    await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);

    for (const drawn of ['s', 't', 'e', 'esp']) await shape(drawn).waitFor();
    await shape('f1').waitFor({ state: 'attached' });
    const notice = h.page.locator('baton-editor .notice');
    await expect.poll(() => notice.textContent()).toMatch(/laid out automatically; save to keep the layout/);
    // bpmn-auto-layout draws no text annotations: the notice names what is missing.
    await expect(notice.textContent()).resolves.toMatch(/Not drawn by the layout: note/);
    await expect(h.page.locator('baton-editor .notice').count()).resolves.toBe(1);
    await h.page.screenshot({ path: path.join(SCREENSHOT_DIR, 'auto-layout-editor.png') });

    expect(await storedXml(created.body.id)).not.toContain('BPMNShape');
    await h.page.getByRole('button', { name: 'Save', exact: true }).click();
    await expect.poll(() => storedXml(created.body.id)).toContain('bpmnElement="t"');
    const saved = await storedXml(created.body.id);
    // The event subprocess's own flow has an edge too (bpmn-auto-layout draws none there).
    expect(saved).toContain('bpmnElement="ef"');
    expect(h.consoleErrors).toEqual([]);
  });

  it('given a draft with its own layout, when it opens in the editor, then it keeps its coordinates and no notice shows', async () => {
    const xml = await readFile(path.resolve('samples/order.bpmn'), 'utf8');
    const created = await h.t.api.post('/api/diagrams', { name: 'With layout', xml });
    await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);
    await shape('Task_ReviewOrder').waitFor();
    const bounds = await h.page.evaluate(() => {
      const el = document.querySelector('g.djs-element[data-element-id="Task_ReviewOrder"]');
      return el?.getAttribute('transform');
    });
    expect(bounds).toBe('matrix(1 0 0 1 710 80)');
    await expect(h.page.locator('baton-editor .notice').count()).resolves.toBe(0);
    await h.page.getByRole('button', { name: 'Save', exact: true }).click();
    await expect
      .poll(async () => (await storedXml(created.body.id)).match(/Task_ReviewOrder_di[\s\S]*?<dc:Bounds[^>]*>/)?.[0])
      .toContain('x="710" y="80"');
    expect(h.consoleErrors).toEqual([]);
  });
});
