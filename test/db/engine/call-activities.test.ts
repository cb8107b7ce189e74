// Call activities against a real PostgreSQL, through the HTTP API: the child is an instance of
// its own; variables cross as each dialect says (Camunda 7: only camunda:in/out; Zeebe: all,
// unless mapped); the child's BPMN error reaches the parent's boundary; its incident shows on the
// parent; canceling or interrupting the parent cancels the child (its late complete answers 409);
// a pinned version is called after a newer one is deployed; a missing process is an incident
// whose retry calls it once deployed; a child that ends without completing is called again by
// the retry of the incident it leaves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  complete,
  deploy,
  fetchOne,
  fetchTasks,
  instanceOf,
  start,
  waitForIncident,
  waitForStatus,
  type LockedTask,
} from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';
import { buildBpmn } from '../../support/bpmn.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:baton="https://baton.dev/schema/bpmn/1.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"`;

function definitions(id: string, body: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">${body}</bpmn:process>
</bpmn:definitions>`;
}

/** start -> work (topic) -> end; `end` may be an error end event */
function child(id: string, topic: string, opts: { retries?: number; errorEnd?: string; compensate?: boolean } = {}): string {
  const retries =
    (opts.retries !== undefined ? ` baton:retries="${opts.retries}"` : '') +
    (opts.compensate ? ' baton:onExhausted="compensate"' : '');
  const end = opts.errorEnd
    ? `<bpmn:endEvent id="end"><bpmn:errorEventDefinition errorRef="E_${id}" /></bpmn:endEvent>`
    : '<bpmn:endEvent id="end" />';
  const xml = definitions(
    id,
    `<bpmn:startEvent id="start" />
     <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="${topic}"${retries} />
     ${end}
     <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
     <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />`,
  );
  return opts.errorEnd
    ? xml.replace('</bpmn:definitions>', `<bpmn:error id="E_${id}" errorCode="${opts.errorEnd}" /></bpmn:definitions>`)
    : xml;
}

/**
 * start -> call -> after (topic `${id}-after`) -> end; `extensions` go on the call activity,
 * `boundary` is attached to it and leads to handled (topic `${id}-handled`).
 */
function parent(id: string, call: { attributes: string; extensions?: string; boundary?: string }): string {
  const boundary = call.boundary
    ? `<bpmn:boundaryEvent id="caught" attachedToRef="call">${call.boundary}</bpmn:boundaryEvent>
       <bpmn:serviceTask id="handled" camunda:type="external" camunda:topic="${id}-handled" />
       <bpmn:endEvent id="handledEnd" />
       <bpmn:sequenceFlow id="b1" sourceRef="caught" targetRef="handled" />
       <bpmn:sequenceFlow id="b2" sourceRef="handled" targetRef="handledEnd" />`
    : '';
  return definitions(
    id,
    `<bpmn:startEvent id="start" />
     <bpmn:callActivity id="call" ${call.attributes}>${call.extensions ? `<bpmn:extensionElements>${call.extensions}</bpmn:extensionElements>` : ''}</bpmn:callActivity>
     <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
     <bpmn:endEvent id="end" />
     <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="call" />
     <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="after" />
     <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
     ${boundary}`,
  );
}

const ok = async (res: Promise<{ status: number; body: unknown }>) => {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
};

/** The instance's called instances, once `n` of them are there. */
async function calledOf(id: string, n = 1): Promise<any[]> {
  return waitFor(
    async () => {
      const called = (await instanceOf(t.api, id)).calledInstances as any[];
      return called.length >= n ? called : undefined;
    },
    10_000,
    `${n} called instance(s) of ${id}`,
  );
}

/** The worker gives up on the task: with onExhausted compensate, its instance compensates. */
async function fail(task: LockedTask): Promise<void> {
  await ok(
    t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorMessage: 'gave up',
      retries: 0,
    }),
  );
}

async function stepStatus(id: string, stepId: string): Promise<string | undefined> {
  return ((await instanceOf(t.api, id)).steps as any[]).find((s) => s.stepId === stepId)?.status;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('call activities', () => {
  it('given Camunda 7 camunda:in/out and the business key, then the child sees only what is passed in and the parent gets only what is passed out', async () => {
    await deploy(t.api, child('c7_child', 'c7-child'));
    await deploy(
      t.api,
      parent('c7_parent', {
        attributes: 'calledElement="c7_child"',
        extensions: `<camunda:in source="order" target="order" /><camunda:in sourceExpression="\${amount gt 3}" target="large" />
                     <camunda:in businessKey="#{execution.processBusinessKey}" />
                     <camunda:out source="result" target="childResult" />`,
      }),
    );
    const id = await start(t.api, 'c7_parent', {
      businessKey: 'order-17',
      variables: { order: { id: 17 }, amount: 5, secret: 's' },
    });
    const task = await fetchOne(t.api, 'w', 'c7-child');
    expect(task.variables).toEqual({ order: { id: 17 }, large: true });
    expect(task.businessKey).toBe('order-17');
    expect(task.instanceId).not.toBe(id);
    const [called] = await calledOf(id);
    expect(called).toMatchObject({ instanceId: task.instanceId, stepId: 'call', definitionKey: 'c7_child', status: 'running' });
    expect((await instanceOf(t.api, task.instanceId)).parent).toEqual({ instanceId: id, stepId: 'call' });
    expect(await stepStatus(id, 'call')).toBe('active');

    await ok(complete(t.api, task, 'w', { result: 'shipped', other: 1 }));
    const after = await fetchOne(t.api, 'w', 'c7_parent-after');
    expect(after.instanceId).toBe(id);
    expect(after.variables).toEqual({ order: { id: 17 }, amount: 5, secret: 's', childResult: 'shipped' });
    expect((await instanceOf(t.api, task.instanceId)).status).toBe('completed');
    await ok(complete(t.api, after, 'w'));
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${task.instanceId}/history`)).body.items as any[];
    expect(history[0]).toMatchObject({ kind: 'instance:started', data: { parentInstanceId: id, parentStepId: 'call' } });
  });

  it('given Zeebe defaults, then every variable crosses both ways; with an output mapping only the mapped one comes back', async () => {
    await deploy(t.api, child('z_child', 'z-child'));
    await deploy(
      t.api,
      parent('z_all', {
        attributes: '',
        extensions: `<zeebe:calledElement processId="=childKey" /><zeebe:ioMapping><zeebe:input source="=amount + 1" target="plus" /></zeebe:ioMapping>`,
      }),
    );
    await deploy(
      t.api,
      parent('z_mapped', {
        attributes: '',
        extensions: `<zeebe:calledElement processId="z_child" propagateAllParentVariables="false" />
                     <zeebe:ioMapping><zeebe:input source="=amount" target="amount" /><zeebe:output source="=result" target="order.result" /></zeebe:ioMapping>`,
      }),
    );
    const all = await start(t.api, 'z_all', { variables: { amount: 1, childKey: 'z_child' } });
    const first = await fetchOne(t.api, 'w', 'z-child');
    expect(first.variables).toEqual({ amount: 1, childKey: 'z_child', plus: 2 });
    await ok(complete(t.api, first, 'w', { result: 'a', extra: true }));
    const afterAll = await fetchOne(t.api, 'w', 'z_all-after');
    expect(afterAll.instanceId).toBe(all);
    expect(afterAll.variables).toEqual({ amount: 1, childKey: 'z_child', plus: 2, result: 'a', extra: true });

    const mapped = await start(t.api, 'z_mapped', { variables: { amount: 3, order: { id: 9 } } });
    const second = await fetchOne(t.api, 'w', 'z-child');
    expect(second.variables).toEqual({ amount: 3 });
    await ok(complete(t.api, second, 'w', { result: 'b', extra: true }));
    const afterMapped = await fetchOne(t.api, 'w', 'z_mapped-after');
    expect(afterMapped.instanceId).toBe(mapped);
    expect(afterMapped.variables).toEqual({ amount: 3, order: { id: 9, result: 'b' } });
  });

  it("given the child's worker reports a BPMN error and its error end event throws one, then the parent's error boundary catches each and the child ends canceled", async () => {
    await deploy(t.api, child('err_child', 'err-child'));
    await deploy(t.api, child('err_end_child', 'err-end-child', { errorEnd: 'OUT_OF_STOCK' }));
    const boundary = '<bpmn:errorEventDefinition errorRef="E_any" camunda:errorCodeVariable="code" />';
    const withError = (xml: string) =>
      xml.replace('</bpmn:definitions>', '<bpmn:error id="E_any" errorCode="OUT_OF_STOCK" /></bpmn:definitions>');
    await deploy(t.api, withError(parent('err_parent', { attributes: 'calledElement="err_child"', boundary })));
    await deploy(t.api, withError(parent('err_end_parent', { attributes: 'calledElement="err_end_child"', boundary })));

    const a = await start(t.api, 'err_parent');
    const failing = await fetchOne(t.api, 'w', 'err-child');
    await ok(
      t.api.post(`/api/external-tasks/${failing.id}/bpmn-error`, {
        workerId: 'w',
        lockToken: failing.lockToken,
        errorCode: 'OUT_OF_STOCK',
      }),
    );
    const handledA = await fetchOne(t.api, 'w', 'err_parent-handled');
    expect(handledA.instanceId).toBe(a);
    expect(handledA.variables.code).toBe('OUT_OF_STOCK');
    expect((await instanceOf(t.api, failing.instanceId)).status).toBe('canceled');
    expect(await stepStatus(a, 'call')).toBe('canceled');

    const b = await start(t.api, 'err_end_parent');
    const work = await fetchOne(t.api, 'w', 'err-end-child');
    await ok(complete(t.api, work, 'w'));
    const handledB = await fetchOne(t.api, 'w', 'err_end_parent-handled');
    expect(handledB.instanceId).toBe(b);
    expect((await instanceOf(t.api, work.instanceId)).status).toBe('canceled');
  });

  it('given nothing catches the child error, then the parent stops in a bpmn_error incident on the call activity', async () => {
    await deploy(t.api, child('unc_child', 'unc-child'));
    await deploy(t.api, parent('unc_parent', { attributes: 'calledElement="unc_child"' }));
    const id = await start(t.api, 'unc_parent');
    const task = await fetchOne(t.api, 'w', 'unc-child');
    await ok(
      t.api.post(`/api/external-tasks/${task.id}/bpmn-error`, { workerId: 'w', lockToken: task.lockToken, errorCode: 'BOOM' }),
    );
    const incident = await waitForStatus(t.api, id, 'incident');
    expect(incident.incidents).toMatchObject([{ stepId: 'call', kind: 'bpmn_error' }]);
    expect(incident.incidents[0].message).toContain('error BOOM');
  });

  it("given the child's task fails for good, then its incident shows on the parent next to the call activity", async () => {
    await deploy(t.api, child('inc_child', 'inc-child', { retries: 0 }));
    await deploy(t.api, parent('inc_parent', { attributes: 'calledElement="inc_child"' }));
    const id = await start(t.api, 'inc_parent');
    const task = await fetchOne(t.api, 'w', 'inc-child');
    const failed = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorMessage: 'disk full',
    });
    expect(failed.status).toBeLessThan(300);
    await waitForStatus(t.api, task.instanceId, 'incident');
    const [called] = await calledOf(id);
    expect(called).toMatchObject({ instanceId: task.instanceId, stepId: 'call', status: 'incident', openIncidents: 1 });
  });

  it('given the parent is canceled, then its child is canceled and the child task complete answers 409; the child alone cannot be canceled', async () => {
    await deploy(t.api, child('cx_child', 'cx-child'));
    await deploy(t.api, parent('cx_parent', { attributes: 'calledElement="cx_child"' }));
    const id = await start(t.api, 'cx_parent');
    const task = await fetchOne(t.api, 'w', 'cx-child');
    const refused = await t.api.post(`/api/instances/${task.instanceId}/cancel`, {});
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain(id);
    expect((await t.api.post(`/api/instances/${id}/cancel`, {})).status).toBe(200);
    expect((await instanceOf(t.api, task.instanceId)).status).toBe('canceled');
    expect((await complete(t.api, task, 'w')).status).toBe(409);
  });

  it('given an interrupting timer on the call activity fires, then the child is canceled and the timer path runs', async () => {
    await deploy(t.api, child('tm_child', 'tm-child'));
    await deploy(
      t.api,
      parent('tm_parent', {
        attributes: 'calledElement="tm_child"',
        boundary: '<bpmn:timerEventDefinition><bpmn:timeDuration>PT0.3S</bpmn:timeDuration></bpmn:timerEventDefinition>',
      }),
    );
    const id = await start(t.api, 'tm_parent');
    const task = await fetchOne(t.api, 'w', 'tm-child');
    const handled = await fetchOne(t.api, 'w', 'tm_parent-handled');
    expect(handled.instanceId).toBe(id);
    expect((await instanceOf(t.api, task.instanceId)).status).toBe('canceled');
    expect((await complete(t.api, task, 'w')).status).toBe(409);
  });

  it('given binding version, then the pinned version is called after a newer one is deployed; latest calls the newer', async () => {
    await deploy(t.api, child('ver_child', 'ver-v1'));
    await deploy(
      t.api,
      parent('ver_pinned', {
        attributes: 'calledElement="ver_child" camunda:calledElementBinding="version" camunda:calledElementVersion="1"',
      }),
    );
    await deploy(t.api, parent('ver_latest', { attributes: 'calledElement="ver_child"' }));
    await deploy(t.api, child('ver_child', 'ver-v2'));
    const pinned = await start(t.api, 'ver_pinned');
    const latest = await start(t.api, 'ver_latest');
    expect((await fetchOne(t.api, 'w', 'ver-v1')).businessKey).toBeNull();
    expect((await calledOf(pinned))[0]).toMatchObject({ definitionKey: 'ver_child', definitionVersion: 1 });
    await fetchOne(t.api, 'w', 'ver-v2');
    expect((await calledOf(latest))[0]).toMatchObject({ definitionKey: 'ver_child', definitionVersion: 2 });
  });

  it('given binding versionTag, then the newest version with that tag is called, not a newer one tagged otherwise; a tag nobody carries is an incident until it is deployed', async () => {
    const tagged = (topic: string, tag: string) =>
      child('tag_child', topic).replace('isExecutable="true"', `isExecutable="true" camunda:versionTag="${tag}"`);
    await deploy(t.api, tagged('tag-a', 'stable'));
    await deploy(t.api, tagged('tag-b', 'stable'));
    await deploy(t.api, tagged('tag-c', 'next'));
    await deploy(
      t.api,
      parent('tag_parent', {
        attributes:
          'calledElement="tag_child" camunda:calledElementBinding="versionTag" camunda:calledElementVersionTag="stable"',
      }),
    );
    const id = await start(t.api, 'tag_parent');
    await fetchOne(t.api, 'w', 'tag-b');
    expect((await calledOf(id))[0]).toMatchObject({ definitionKey: 'tag_child', definitionVersion: 2 });

    await deploy(
      t.api,
      parent('tag_missing', {
        attributes: 'calledElement="tag_child" camunda:calledElementBinding="versionTag" camunda:calledElementVersionTag="v9"',
      }),
    );
    const missing = await start(t.api, 'tag_missing');
    const stuck = await waitForStatus(t.api, missing, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'call', kind: 'call_activity', details: { versionTag: 'v9' } }]);
    expect(stuck.incidents[0].message).toContain('with version tag v9');
    await deploy(t.api, tagged('tag-v9', 'v9'));
    expect((await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, {})).status).toBeLessThan(300);
    expect((await fetchOne(t.api, 'w', 'tag-v9')).instanceId).not.toBe(missing);
    expect((await calledOf(missing))[0]).toMatchObject({ definitionKey: 'tag_child', definitionVersion: 4 });
  });

  it('given the called process is not deployed, then the call activity is an incident; deployed and retried, the child runs', async () => {
    await deploy(t.api, parent('miss_parent', { attributes: 'calledElement="miss_child"' }));
    const id = await start(t.api, 'miss_parent');
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'call', kind: 'call_activity' }]);
    expect(stuck.incidents[0].message).toContain('miss_child');
    expect(stuck.calledInstances).toEqual([]);
    await deploy(t.api, child('miss_child', 'miss-child'));
    expect((await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, {})).status).toBeLessThan(300);
    const task: LockedTask = await fetchOne(t.api, 'w', 'miss-child');
    await ok(complete(t.api, task, 'w'));
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'miss_parent-after'), 'w'));
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a call activity inside a loop, then each pass calls a child of its own, named by the pass, and the loop leaves after the second', async () => {
    await deploy(t.api, child('loop_child', 'loop-child'));
    await deploy(
      t.api,
      buildBpmn(
        'loop_parent',
        [
          { id: 'start', type: 'startEvent' },
          { id: 'call', type: 'callActivity', calledElement: 'loop_child' },
          { id: 'again', type: 'exclusiveGateway', default: 'out' },
          { id: 'end', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'call' },
          { from: 'call', to: 'again' },
          { id: 'back', from: 'again', to: 'call', condition: '=n < 2' },
          { id: 'out', from: 'again', to: 'end' },
        ],
      ),
    );
    const id = await start(t.api, 'loop_parent', { variables: { n: 0 } });
    for (let pass = 1; pass <= 2; pass++) {
      const task = await fetchOne(t.api, 'w', 'loop-child');
      expect(task.variables).toEqual({ n: pass - 1 });
      await ok(complete(t.api, task, 'w', { n: pass }));
    }
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ n: 2 });
    expect(done.calledInstances.map((c: any) => [c.scopePath, c.status])).toEqual([
      ['/loop:call#1', 'completed'],
      ['/loop:call#2', 'completed'],
    ]);
  });

  it('given a parallel multi-instance call activity over three elements, then three children run at once and the results come back in input order', async () => {
    await deploy(t.api, child('mi_child', 'mi-child'));
    const marker = (attributes: string, inner = '') =>
      `<bpmn:multiInstanceLoopCharacteristics ${attributes} camunda:collection="items" camunda:elementVariable="item" baton:outputCollection="results" baton:outputElement="=done">${inner}</bpmn:multiInstanceLoopCharacteristics>`;
    const mi = (id: string, attributes: string, inner = '') =>
      parent(id, {
        attributes: 'calledElement="mi_child"',
        extensions: '<camunda:in variables="all" /><camunda:out variables="all" />',
      }).replace('</bpmn:callActivity>', `${marker(attributes, inner)}</bpmn:callActivity>`);
    await deploy(t.api, mi('mi_parallel', ''));
    const id = await start(t.api, 'mi_parallel', { variables: { items: ['a', 'b', 'c'] } });
    const tasks = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'w', ['mi-child']);
        return got.length === 3 ? got : undefined;
      },
      10_000,
      'three children',
    );
    expect(tasks.map((x) => [x.variables.item, x.variables.loopCounter]).sort()).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 2],
    ]);
    // Completed out of order: the collection keeps the input order.
    for (const item of ['c', 'a', 'b']) {
      const task = tasks.find((x) => x.variables.item === item)!;
      await ok(complete(t.api, task, 'w', { done: `${item}!` }));
    }
    const after = await fetchOne(t.api, 'w', 'mi_parallel-after');
    expect(after.variables.results).toEqual(['a!', 'b!', 'c!']);
    expect(after.variables).not.toHaveProperty('done');
    expect((await calledOf(id, 3)).map((c) => c.loopCounter)).toEqual([0, 1, 2]);
  });

  it('given a multi-instance call activity that passes the business key, then every child gets it: a business key is unique only among instances started on their own', async () => {
    await deploy(t.api, child('bk_child', 'bk-child'));
    const xml = parent('bk_parent', {
      attributes: 'calledElement="bk_child"',
      extensions: '<camunda:in businessKey="#{execution.processBusinessKey}" />',
    }).replace(
      '</bpmn:callActivity>',
      '<bpmn:multiInstanceLoopCharacteristics camunda:collection="items" camunda:elementVariable="item" /></bpmn:callActivity>',
    );
    await deploy(t.api, xml);
    const id = await start(t.api, 'bk_parent', { businessKey: 'order-7', variables: { items: ['a', 'b'] } });
    const tasks = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'w', ['bk-child']);
        return got.length === 2 ? got : undefined;
      },
      10_000,
      'two children',
    );
    expect(tasks.map((x) => x.businessKey)).toEqual(['order-7', 'order-7']);
    const children = await calledOf(id, 2);
    const rows = await t.db.pool.query('select business_key from instances where id = any($1)', [
      children.map((c) => c.instanceId),
    ]);
    expect(rows.rows.map((r) => r.business_key)).toEqual(['order-7', 'order-7']);
    // A start of the parent's process with that key still answers the instance that holds it.
    const again = await t.api.post('/api/instances', { definitionKey: 'bk_parent', businessKey: 'order-7' });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(id);
    for (const task of tasks) await ok(complete(t.api, task, 'w'));
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'bk_parent-after'), 'w'));
    await waitForStatus(t.api, id, 'completed');
  });

  it("given a call activity whose output mapping fails, then the child's return is kept in the incident and the retry maps it again with the retry's variables, without calling the child again", async () => {
    await deploy(t.api, child('kept_child', 'kept-child'));
    const xml = parent('kept_one', {
      attributes: '',
      extensions:
        '<zeebe:calledElement processId="kept_child" /><zeebe:ioMapping><zeebe:output source="=2 in (1..max)" target="fits" /><zeebe:output source="=result" target="childResult" /></zeebe:ioMapping>',
    });
    await deploy(t.api, xml);
    const id = await start(t.api, 'kept_one', { variables: { max: 'x' } });
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'kept-child'), 'w', { result: 'r-1' }));
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'call', kind: 'io_mapping' });
    expect(incident.message).toMatch(/variables are kept: retry the incident, with variables that fix the mapping/);
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const after = await fetchOne(t.api, 'w', 'kept_one-after');
    expect(after.variables).toMatchObject({ max: 5, fits: true, childResult: 'r-1' });
    expect(await fetchTasks(t.api, 'w', ['kept-child'])).toEqual([]);
    await ok(complete(t.api, after, 'w'));
    await waitForStatus(t.api, id, 'completed');
    expect(await calledOf(id, 1)).toHaveLength(1);
  });

  it('given a parallel multi-instance call activity whose output mapping fails for one element, then the returns of the others that end meanwhile are kept too, and the retry applies them all', async () => {
    await deploy(t.api, child('kept_mi_child', 'kept-mi-child'));
    const xml = parent('kept_mi', {
      attributes: '',
      extensions:
        '<zeebe:calledElement processId="kept_mi_child" /><zeebe:ioMapping><zeebe:output source="=2 in (1..max)" target="fits" /></zeebe:ioMapping>',
    }).replace(
      '</bpmn:callActivity>',
      '<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=items" inputElement="item" outputCollection="results" outputElement="=fits" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics></bpmn:callActivity>',
    );
    await deploy(t.api, xml);
    const id = await start(t.api, 'kept_mi', { variables: { items: ['a', 'b', 'c'], max: 3 } });
    const tasks = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'w', ['kept-mi-child']);
        return got.length === 3 ? got : undefined;
      },
      10_000,
      'three children',
    );
    const byItem = (item: string) => tasks.find((x) => x.variables.item === item)!;
    await ok(complete(t.api, byItem('a'), 'w', { max: 'x' }));
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'call', kind: 'io_mapping' });
    // b and c end while the step waits in its incident: their returns are kept, not dropped.
    await ok(complete(t.api, byItem('b'), 'w'));
    await ok(complete(t.api, byItem('c'), 'w', { max: 1 }));
    // Both returns were taken (and kept) before the retry.
    await waitFor(
      async () => {
        const { rows } = await t.db.pool.query('select count(*)::int as n from call_returns where parent_instance_id = $1', [id]);
        const ended = ((await instanceOf(t.api, id)).calledInstances as any[]).filter((c) => c.status === 'completed');
        return ended.length === 3 && rows[0].n === 0 ? true : undefined;
      },
      10_000,
      'the returns taken',
    );
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const after = await fetchOne(t.api, 'w', 'kept_mi-after');
    // The retry's max fixes the failed element's mapping only; c's kept return maps as it came.
    expect(after.variables.results).toEqual([true, true, false]);
    expect(await fetchTasks(t.api, 'w', ['kept-mi-child'])).toEqual([]);
    await ok(complete(t.api, after, 'w'));
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a child that ends compensated, and one whose BPMN error nothing catches, then the retry of the incident calls a new child, which the call activity waits for', async () => {
    await deploy(t.api, child('undo_child', 'undo-child', { retries: 1, compensate: true }));
    await deploy(t.api, parent('undo_parent', { attributes: 'calledElement="undo_child"' }));
    const id = await start(t.api, 'undo_parent');
    await fail(await fetchOne(t.api, 'w', 'undo-child'));
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'call', kind: 'call_activity' });
    expect(incident.message).toMatch(/was compensated instead of completing\. Retry the incident to call it again/);
    await ok(t.api.post(`/api/incidents/${incident.id}/retry`, {}));
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'undo-child'), 'w'));
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'undo_parent-after'), 'w'));
    await waitForStatus(t.api, id, 'completed');
    expect((await calledOf(id, 2)).map((c) => c.status)).toEqual(['compensated', 'completed']);

    await deploy(t.api, child('throw_child', 'throw-child', { errorEnd: 'late' }));
    await deploy(t.api, parent('throw_parent', { attributes: 'calledElement="throw_child"' }));
    const thrown = await start(t.api, 'throw_parent');
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'throw-child'), 'w'));
    const uncaught = await waitForIncident(t.api, thrown);
    expect(uncaught).toMatchObject({ stepId: 'call', kind: 'bpmn_error' });
    expect(uncaught.message).toMatch(/retry the incident to call it again/);
    await ok(t.api.post(`/api/incidents/${uncaught.id}/retry`, {}));
    // The new child runs: it throws again, and the call activity stops in a new incident.
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'throw-child'), 'w'));
    await waitFor(
      async () => ((await calledOf(thrown, 2)).every((c) => c.status === 'canceled') ? true : undefined),
      10_000,
      'the second child to throw',
    );
    expect((await waitForIncident(t.api, thrown)).id).not.toBe(uncaught.id);
  });

  it('given a parallel multi-instance call activity whose elements a and b end compensated, then the retry calls those two again and the results come back in input order', async () => {
    await deploy(t.api, child('undo_mi_child', 'undo-mi-child', { retries: 1, compensate: true }));
    const xml = parent('undo_mi', {
      attributes: 'calledElement="undo_mi_child"',
      extensions: '<camunda:in variables="all" /><camunda:out variables="all" />',
    }).replace(
      '</bpmn:callActivity>',
      '<bpmn:multiInstanceLoopCharacteristics camunda:collection="items" camunda:elementVariable="item" baton:outputCollection="results" baton:outputElement="=done" /></bpmn:callActivity>',
    );
    await deploy(t.api, xml);
    const id = await start(t.api, 'undo_mi', { variables: { items: ['a', 'b', 'c'] } });
    const tasks = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'w', ['undo-mi-child']);
        return got.length === 3 ? got : undefined;
      },
      10_000,
      'three children',
    );
    const byItem = (item: string) => tasks.find((x) => x.variables.item === item)!;
    await fail(byItem('a'));
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'call', kind: 'call_activity' });
    // b ends compensated and c completes while the step waits in the incident: both are kept.
    await fail(byItem('b'));
    await ok(complete(t.api, byItem('c'), 'w', { done: 'c!' }));
    await waitFor(
      async () => {
        const { rows } = await t.db.pool.query('select count(*)::int as n from call_returns where parent_instance_id = $1', [id]);
        const ended = (await calledOf(id, 3)).filter((c) => c.status !== 'running');
        return ended.length === 3 && rows[0].n === 0 ? true : undefined;
      },
      10_000,
      'the returns taken',
    );
    expect((await instanceOf(t.api, id)).incidents).toHaveLength(1);
    await ok(t.api.post(`/api/incidents/${incident.id}/retry`, {}));
    const again = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'w', ['undo-mi-child']);
        return got.length === 2 ? got : undefined;
      },
      10_000,
      'a and b called again',
    );
    expect(again.map((x) => [x.variables.item, x.variables.loopCounter]).sort()).toEqual([
      ['a', 0],
      ['b', 1],
    ]);
    for (const task of again) await ok(complete(t.api, task, 'w', { done: `${String(task.variables.item)}!` }));
    const after = await fetchOne(t.api, 'w', 'undo_mi-after');
    expect(after.variables.results).toEqual(['a!', 'b!', 'c!']);
    const called = await calledOf(id, 5);
    expect(called.map((c) => `${c.loopCounter}:${c.status}`).sort()).toEqual([
      '0:compensated',
      '0:completed',
      '1:compensated',
      '1:completed',
      '2:completed',
    ]);
  });

  it('given a sequential multi-instance call activity with a completion condition, then children run one after another and the third is never called', async () => {
    await deploy(t.api, child('seq_child', 'seq-child'));
    const xml = parent('mi_seq', {
      attributes: 'calledElement="seq_child"',
      extensions: '<camunda:in variables="all" /><camunda:out variables="all" />',
    }).replace(
      '</bpmn:callActivity>',
      `<bpmn:multiInstanceLoopCharacteristics isSequential="true" camunda:collection="items" camunda:elementVariable="item" baton:outputCollection="results" baton:outputElement="=done">
         <bpmn:completionCondition xsi:type="bpmn:tFormalExpression">= nrOfCompletedInstances &gt;= 2</bpmn:completionCondition>
       </bpmn:multiInstanceLoopCharacteristics></bpmn:callActivity>`,
    );
    await deploy(t.api, xml);
    const id = await start(t.api, 'mi_seq', { variables: { items: ['x', 'y', 'z'] } });
    for (const item of ['x', 'y']) {
      const task = await fetchOne(t.api, 'w', 'seq-child');
      expect(task.variables.item).toBe(item);
      expect(await fetchTasks(t.api, 'w', ['seq-child'])).toEqual([]); // one at a time
      await ok(complete(t.api, task, 'w', { done: item.toUpperCase() }));
    }
    const after = await fetchOne(t.api, 'w', 'mi_seq-after');
    expect(after.instanceId).toBe(id);
    expect(after.variables.results).toEqual(['X', 'Y', null]);
    expect(await calledOf(id, 2)).toHaveLength(2);
  });

  it('given a multi-instance call activity whose process is not deployed, then it is an incident, and once deployed its retry calls every element', async () => {
    const xml = parent('mi_missing_parent', { attributes: 'calledElement="mi_missing"' }).replace(
      '</bpmn:callActivity>',
      '<bpmn:multiInstanceLoopCharacteristics camunda:collection="items" camunda:elementVariable="item" /></bpmn:callActivity>',
    );
    await deploy(t.api, xml);
    const id = await start(t.api, 'mi_missing_parent', { variables: { items: [1, 2] } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'call', kind: 'call_activity' }]);
    await deploy(t.api, child('mi_missing', 'mi-missing'));
    expect((await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, {})).status).toBeLessThan(300);
    for (let i = 0; i < 2; i++) await ok(complete(t.api, await fetchOne(t.api, 'w', 'mi-missing'), 'w'));
    expect((await fetchOne(t.api, 'w', 'mi_missing_parent-after')).instanceId).toBe(id);
    expect(await calledOf(id, 2)).toHaveLength(2);
  });

  it('given a called process without a none start event, then the call activity is an incident that says so', async () => {
    await deploy(
      t.api,
      definitions(
        'msg_only',
        `<bpmn:startEvent id="start"><bpmn:messageEventDefinition messageRef="M_msg_only" /></bpmn:startEvent><bpmn:endEvent id="end" />
         <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="end" />`,
      ).replace('</bpmn:definitions>', '<bpmn:message id="M_msg_only" name="msg-only" /></bpmn:definitions>'),
    );
    await deploy(t.api, parent('msg_only_parent', { attributes: 'calledElement="msg_only"' }));
    const id = await start(t.api, 'msg_only_parent');
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents[0].message).toContain('no none start event');
    expect(stuck.calledInstances).toEqual([]);
  });
});
