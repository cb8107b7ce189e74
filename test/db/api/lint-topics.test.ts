// POST /api/definitions/lint warns about a service task whose topic no worker has fetched
// and no element template binds; deploy does not refuse for it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchTasks } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

/** start -> three named service tasks in a row -> end */
function threeTasks(processId: string, topics: [served: string, templated: string, nobody: string]): string {
  const [a, b, c] = topics;
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="${processId}" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:serviceTask id="served" name="Reserve stock" camunda:type="external" camunda:topic="${a}"/>
    <bpmn:serviceTask id="templated" name="Charge card" camunda:type="external" camunda:topic="${b}"/>
    <bpmn:serviceTask id="nobody" camunda:type="external" camunda:topic="${c}"/>
    <bpmn:endEvent id="end"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="served"/>
    <bpmn:sequenceFlow id="f2" sourceRef="served" targetRef="templated"/>
    <bpmn:sequenceFlow id="f3" sourceRef="templated" targetRef="nobody"/>
    <bpmn:sequenceFlow id="f4" sourceRef="nobody" targetRef="end"/>
  </bpmn:process>
</bpmn:definitions>`;
}

function chargeTemplate(topic: string): any {
  const file = path.resolve(import.meta.dirname, '../../fixtures/element-templates/camunda7-charge-card.json');
  const template = JSON.parse(readFileSync(file, 'utf8'));
  template.id = `lint.${topic}`;
  template.properties.find((p: any) => p.binding.name === 'camunda:topic').value = topic;
  return template;
}

describe('lint: topics without a worker', () => {
  it('given one topic fetched, one bound by a template and one neither, then one warning on the third task, and deploy still accepts it', async () => {
    await fetchTasks(t.api, 'stock-1', ['lint-stock']);
    expect((await t.api.call('PUT', '/api/element-templates', chargeTemplate('lint-charge'))).status).toBe(201);
    const xml = threeTasks('lint-topics', ['lint-stock', 'lint-charge', 'lint-nobdy']);

    const lint = await t.api.post('/api/definitions/lint', { xml });
    expect(lint.status).toBe(200);
    expect(lint.body.ok).toBe(true);
    expect(lint.body.warnings).toEqual([
      {
        elementId: 'nobody',
        severity: 'warning',
        code: 'topic-without-worker',
        message:
          "No worker has fetched topic 'lint-nobdy' of 'nobody' in the last 24 h and no element template binds it: start a worker for topic 'lint-nobdy' or check the spelling",
      },
    ]);

    const deployed = await t.api.post('/api/definitions', { xml });
    expect(deployed.status).toBe(201);
    expect(deployed.body.warnings).toEqual([]);
  });

  it('given a task named in the diagram, then the warning names it; a fetch of its topic makes the warning go away', async () => {
    const xml = threeTasks('lint-named', ['lint-unfetched', 'lint-charge', 'lint-stock']);
    const before = await t.api.post('/api/definitions/lint', { xml });
    expect(before.body.warnings.map((w: any) => [w.elementId, w.code])).toEqual([['served', 'topic-without-worker']]);
    expect(before.body.warnings[0].message).toMatch(/^No worker has fetched topic 'lint-unfetched' of 'Reserve stock'/);
    await fetchTasks(t.api, 'late-1', ['lint-unfetched']);
    const after = await t.api.post('/api/definitions/lint', { xml });
    expect(after.body.warnings).toEqual([]);
  });
});
