// Camunda 7 deployments against a real PostgreSQL, through /engine-rest: a deployment keeps
// every resource it was given and makes a new version of every executable process in it (a
// file with two processes deploys both); duplicate filtering answers the same deployment; a
// call activity bound to its deployment calls the version deployed beside it, not a newer one;
// deleting a deployment refuses while it has instances unless cascade, which cancels and
// deletes them, and hands the timer start schedule back to the version before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { complete, fetchOne, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { checkResponse } from '../support/response-check.ts';
import { engineRest } from './support.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"`;

function definitions(id: string, processes: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">${processes}</bpmn:definitions>`;
}

/** start -> work (topic) -> end */
function taskProcess(id: string, topic: string): string {
  return `<bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="${id}_start" />
    <bpmn:serviceTask id="${id}_work" camunda:type="external" camunda:topic="${topic}" />
    <bpmn:endEvent id="${id}_end" />
    <bpmn:sequenceFlow id="${id}_f1" sourceRef="${id}_start" targetRef="${id}_work" />
    <bpmn:sequenceFlow id="${id}_f2" sourceRef="${id}_work" targetRef="${id}_end" />
  </bpmn:process>`;
}

/** start -> call (bound as `binding` says: Camunda 7 attributes or Zeebe's calledElement) -> end */
function callerProcess(id: string, called: string, binding: 'camunda' | 'zeebe'): string {
  const call =
    binding === 'camunda'
      ? `<bpmn:callActivity id="call" calledElement="${called}" camunda:calledElementBinding="deployment" />`
      : `<bpmn:callActivity id="call"><bpmn:extensionElements><zeebe:calledElement processId="${called}" bindingType="deployment" /></bpmn:extensionElements></bpmn:callActivity>`;
  return `<bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    ${call}
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="call" />
    <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="end" />
  </bpmn:process>`;
}

/** a timer start event on a cycle -> end */
function timerStart(id: string): string {
  return definitions(
    id,
    `<bpmn:process id="${id}" isExecutable="true">
      <bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeCycle>R/PT1H</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>
      <bpmn:endEvent id="end" />
      <bpmn:sequenceFlow id="f1" sourceRef="tick" targetRef="end" />
    </bpmn:process>`,
  );
}

type Part = { field: string; filename?: string; content: string };

async function deployForm(parts: Part[]) {
  const form = new FormData();
  for (const p of parts) {
    if (p.filename) form.append(p.field, new Blob([p.content], { type: 'application/octet-stream' }), p.filename);
    else form.append(p.field, String(p.content));
  }
  const res = await fetch(`${t.url}/engine-rest/deployment/create`, { method: 'POST', body: form });
  const body = await res.json();
  checkResponse({
    method: 'POST',
    path: '/engine-rest/deployment/create',
    status: res.status,
    contentType: res.headers.get('content-type'),
    body,
  });
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

const definitionsOf = (deployment: any) =>
  Object.values(deployment.deployedProcessDefinitions ?? {})
    .map((d: any) => [d.key, d.version, d.resource])
    .sort();

async function count(sql: string, values: unknown[]): Promise<number> {
  const { rows } = await t.db.pool.query(`select count(*)::int as n from ${sql}`, values);
  return rows[0].n;
}

describe('deployment/create and its resources', () => {
  it('given two BPMN files (one with two processes) and a form, then all three processes are new versions in one deployment that serves every resource as uploaded', async () => {
    const form = JSON.stringify({ components: [{ type: 'textfield', key: 'name' }] });
    const d = await deployForm([
      { field: 'deployment-name', content: 'dp-pair' },
      { field: 'deployment-source', content: 'modeler' },
      {
        field: 'a',
        filename: 'pair.bpmn',
        content: definitions('dp_pair', taskProcess('dp_left', 'dp-left') + taskProcess('dp_right', 'dp-right')),
      },
      { field: 'b', filename: 'single.bpmn', content: definitions('dp_single', taskProcess('dp_single', 'dp-single')) },
      { field: 'c', filename: 'start.form', content: form },
    ]);
    expect(d).toMatchObject({ name: 'dp-pair', source: 'modeler', tenantId: null });
    expect(definitionsOf(d)).toEqual([
      ['dp_left', 1, 'pair.bpmn'],
      ['dp_right', 1, 'pair.bpmn'],
      ['dp_single', 1, 'single.bpmn'],
    ]);

    const listed = await engineRest(t.url, 'GET', `/deployment?name=dp-pair`);
    expect(listed.body.map((x: any) => x.id)).toEqual([d.id]);
    const got = await engineRest(t.url, 'GET', `/deployment/${d.id}`);
    expect(got.body).toMatchObject({ id: d.id, name: 'dp-pair', source: 'modeler' });
    const resources = await engineRest(t.url, 'GET', `/deployment/${d.id}/resources`);
    expect(resources.body.map((r: any) => [r.name, r.deploymentId])).toEqual([
      ['pair.bpmn', d.id],
      ['single.bpmn', d.id],
      ['start.form', d.id],
    ]);
    const formResource = resources.body.find((r: any) => r.name === 'start.form');
    const data = await fetch(`${t.url}/engine-rest/deployment/${d.id}/resources/${formResource.id}/data`);
    expect(data.headers.get('content-disposition')).toBe('attachment; filename="start.form"');
    expect(await data.text()).toBe(form);

    // Process definitions name their deployment and resource; the deployment filters them.
    const defs = await engineRest(t.url, 'GET', `/process-definition?deploymentId=${d.id}&sortBy=key&sortOrder=asc`);
    expect(defs.body.map((x: any) => [x.key, x.deploymentId, x.resource])).toEqual([
      ['dp_left', d.id, 'pair.bpmn'],
      ['dp_right', d.id, 'pair.bpmn'],
      ['dp_single', d.id, 'single.bpmn'],
    ]);
    const byResource = await engineRest(t.url, 'GET', `/process-definition/count?resourceNameLike=pair%25`);
    expect(byResource.body.count).toBe(2);
    expect((await engineRest(t.url, 'GET', `/deployment/${d.id}/resources/${d.id}`)).status).toBe(404);
  });

  it('given the same upload again, then without filtering every process gets a new version; with duplicate filtering the same deployment answers; deploy-changed-only versions only the changed file', async () => {
    const one = definitions('dp_dup_a', taskProcess('dp_dup_a', 'dp-dup'));
    const two = definitions('dp_dup_b', taskProcess('dp_dup_b', 'dp-dup'));
    const upload = (extra: Part[], b = two) => [
      { field: 'deployment-name', content: 'dp-dup' },
      ...extra,
      { field: 'a', filename: 'a.bpmn', content: one },
      { field: 'b', filename: 'b.bpmn', content: b },
    ];
    const first = await deployForm(upload([]));
    const again = await deployForm(upload([]));
    expect(again.id).not.toBe(first.id);
    expect(definitionsOf(again)).toEqual([
      ['dp_dup_a', 2, 'a.bpmn'],
      ['dp_dup_b', 2, 'b.bpmn'],
    ]);

    const filtered = await deployForm(upload([{ field: 'enable-duplicate-filtering', content: 'true' }]));
    expect(filtered.id).toBe(again.id);
    expect(definitionsOf(filtered)).toEqual(definitionsOf(again));
    expect(await count("definitions where key like 'dp_dup_%'", [])).toBe(4);

    const changed = two.replace('dp-dup"', 'dp-dup-changed"');
    const partly = await deployForm(upload([{ field: 'deploy-changed-only', content: 'true' }], changed));
    expect(partly.id).not.toBe(again.id);
    expect(definitionsOf(partly)).toEqual([['dp_dup_b', 3, 'b.bpmn']]);
    expect(await count("definitions where key = 'dp_dup_a'", [])).toBe(2);

    const bad = await fetch(`${t.url}/engine-rest/deployment/create`, {
      method: 'POST',
      body: (() => {
        const f = new FormData();
        f.append('tenant-id', 'acme');
        f.append('a', new Blob([one]), 'a.bpmn');
        return f;
      })(),
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toContain('tenant');
    expect(await count("definitions where key like 'dp_dup_%'", [])).toBe(5);
  });
});

describe('call activities bound to their deployment', () => {
  for (const binding of ['camunda', 'zeebe'] as const) {
    it(`given ${binding} binding "deployment" and a newer callee deployed apart, then the child runs the callee deployed with its caller`, async () => {
      const caller = `dp_caller_${binding}`;
      const callee = `dp_callee_${binding}`;
      const topic = `dp-callee-${binding}`;
      const process = callerProcess(caller, callee, binding);
      const d = await deployForm([
        { field: 'a', filename: 'caller.bpmn', content: definitions(caller, process) },
        { field: 'b', filename: 'callee.bpmn', content: definitions(callee, taskProcess(callee, topic)) },
      ]);
      expect(definitionsOf(d).map((x) => x[0])).toEqual([callee, caller]);
      // A newer callee, deployed on its own: binding latest would take it.
      await deployForm([
        { field: 'b', filename: 'callee.bpmn', content: definitions(callee, taskProcess(callee, `${topic}-v2`)) },
      ]);

      const id = await start(t.api, caller);
      const task = await fetchOne(t.api, 'dp-worker', topic);
      const { rows } = await t.db.pool.query('select definition_version from instances where parent_instance_id = $1', [id]);
      expect(rows.map((r) => r.definition_version)).toEqual([1]);
      expect((await complete(t.api, task, 'dp-worker')).status).toBe(204);
      await waitForStatus(t.api, id, 'completed');
    });
  }

  it('given binding="deployment" and a callee deployed only apart, then the call is an incident that says to deploy them together', async () => {
    await deployForm([
      { field: 'b', filename: 'callee.bpmn', content: definitions('dp_apart', taskProcess('dp_apart', 'dp-apart')) },
    ]);
    await deployForm([
      {
        field: 'a',
        filename: 'caller.bpmn',
        content: definitions('dp_lonely', callerProcess('dp_lonely', 'dp_apart', 'camunda')),
      },
    ]);
    const id = await start(t.api, 'dp_lonely');
    const instance = await waitForStatus(t.api, id, 'incident');
    expect(JSON.stringify(instance.incidents)).toContain('Deploy the caller and dp_apart together');
    expect(await count('instances where parent_instance_id = $1', [id])).toBe(0);
  });
});

describe('DELETE /deployment/{id}', () => {
  it('given instances, then without cascade 409 changes nothing; with cascade the running one is canceled, every instance and its history deleted, and the version before schedules the timer start again', async () => {
    const v1 = await deployForm([{ field: 'a', filename: 'tick.bpmn', content: timerStart('dp_tick') }]);
    const xml = definitions('dp_del', taskProcess('dp_del', 'dp-del'));
    const v2 = await deployForm([
      { field: 'a', filename: 'tick.bpmn', content: timerStart('dp_tick').replace('R/PT1H', 'R/PT2H') },
      { field: 'b', filename: 'del.bpmn', content: xml },
    ]);
    const [v1Tick] = Object.keys(v1.deployedProcessDefinitions);
    const v2Tick = Object.values(v2.deployedProcessDefinitions).find((x: any) => x.key === 'dp_tick') as any;
    const waitingTimers = (definitionId: string) =>
      count("timers where definition_id = $1 and instance_id is null and state = 'waiting'", [definitionId]);
    expect(await waitingTimers(v2Tick.id)).toBe(1);
    expect(await waitingTimers(v1Tick!)).toBe(0);

    const ended = await start(t.api, 'dp_del');
    expect((await complete(t.api, await fetchOne(t.api, 'dp-worker', 'dp-del'), 'dp-worker')).status).toBe(204);
    await waitForStatus(t.api, ended, 'completed');
    const running = await start(t.api, 'dp_del');
    const task = await fetchOne(t.api, 'dp-worker', 'dp-del');

    const refused = await engineRest(t.url, 'DELETE', `/deployment/${v2.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain('cascade=true');
    expect(await count('definitions where deployment_id = $1', [v2.id])).toBe(2);
    expect((await engineRest(t.url, 'DELETE', `/deployment/${v2.id}?cascade=maybe`)).status).toBe(400);
    expect((await engineRest(t.url, 'DELETE', `/deployment/${v2.id}?force=true`)).status).toBe(400);

    expect((await engineRest(t.url, 'DELETE', `/deployment/${v2.id}?cascade=true&skipCustomListeners=true`)).status).toBe(204);
    expect(await count('instances where id = any($1)', [[ended, running]])).toBe(0);
    expect(await count('events where instance_id = any($1)', [[ended, running]])).toBe(0);
    expect(await count('definitions where deployment_id = $1', [v2.id])).toBe(0);
    expect(await count('deployment_resources where deployment_id = $1', [v2.id])).toBe(0);
    // The late complete of the canceled instance's task changes nothing.
    expect((await complete(t.api, task, 'dp-worker')).status).toBeGreaterThanOrEqual(400);
    expect(await waitingTimers(v1Tick!)).toBe(1);
    expect((await engineRest(t.url, 'GET', `/deployment/${v2.id}`)).status).toBe(404);
    expect((await engineRest(t.url, 'DELETE', `/deployment/${v2.id}`)).status).toBe(404);
    const latest = await engineRest(t.url, 'GET', '/process-definition/key/dp_tick');
    expect(latest.body).toMatchObject({ id: v1Tick, version: 1, deploymentId: v1.id });
    expect((await engineRest(t.url, 'GET', '/process-definition/key/dp_del')).status).toBe(404);

    // The key takes its next version from what is left.
    const redeployed = await deployForm([{ field: 'b', filename: 'del.bpmn', content: xml }]);
    expect(definitionsOf(redeployed)).toEqual([['dp_del', 1, 'del.bpmn']]);
    await waitFor(async () => ((await waitingTimers(v1Tick!)) === 1 ? true : undefined), 2000, 'v1 timer');
  });

  it("given a caller whose child runs a definition of another deployment, then deleting the caller's deployment with cascade cancels and deletes the child too, and the other deployment stays", async () => {
    const callee = await deployForm([
      { field: 'b', filename: 'callee.bpmn', content: definitions('dp_far_child', taskProcess('dp_far_child', 'dp-far')) },
    ]);
    const caller = await deployForm([
      {
        field: 'a',
        filename: 'caller.bpmn',
        content: definitions(
          'dp_far_parent',
          callerProcess('dp_far_parent', 'dp_far_child', 'camunda').replace(' camunda:calledElementBinding="deployment"', ''),
        ),
      },
    ]);
    const parent = await start(t.api, 'dp_far_parent');
    const task = await fetchOne(t.api, 'dp-worker', 'dp-far');
    const child = task.instanceId;
    expect(await count('instances where id = $1 and parent_instance_id = $2', [child, parent])).toBe(1);

    expect((await engineRest(t.url, 'DELETE', `/deployment/${caller.id}?cascade=true`)).status).toBe(204);
    expect(await count('instances where id = any($1)', [[parent, child]])).toBe(0);
    expect(await count('events where instance_id = $1', [child])).toBe(0);
    expect((await t.api.get(`/api/instances/${child}`)).status).toBe(404);
    expect((await complete(t.api, task, 'dp-worker')).status).toBeGreaterThanOrEqual(400);
    expect(await count('definitions where deployment_id = $1', [callee.id])).toBe(1);
    expect((await engineRest(t.url, 'GET', `/deployment/${callee.id}`)).status).toBe(200);
  });

  it('given a native deploy, then it is a deployment of its own named after the key, and a second deploy of the same XML makes none', async () => {
    const xml = singleTaskBpmn('dp_native', 'dp-native');
    const first = await t.api.post('/api/definitions', { xml });
    const again = await t.api.post('/api/definitions', { xml });
    expect(again.body.id).toBe(first.body.id);
    const listed = await engineRest(t.url, 'GET', '/deployment?name=dp_native');
    expect(listed.body).toHaveLength(1);
    const resources = await engineRest(t.url, 'GET', `/deployment/${listed.body[0].id}/resources`);
    expect(resources.body.map((r: any) => r.name)).toEqual(['dp_native.bpmn']);
  });
});
