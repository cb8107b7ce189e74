// Parallel multi-instance subprocesses against a real PostgreSQL, through the HTTP API: every
// element runs the body at once, each as a child instance of the body's definition (deployed
// with the process), with its element variable and loopCounter its own; the results land in input
// order; a completion condition cancels the elements still open; what a body changes reaches the
// process, and nothing it only read is written back over a newer value; a BPMN error inside the
// body reaches the subprocess's boundary; canceling the process cancels the elements; the
// subprocess's output mappings run as each element ends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  complete,
  deploy,
  deployMappingsRun,
  fetchOne,
  fetchTasks,
  instanceOf,
  start,
  waitForIncident,
  waitForStatus,
  type LockedTask,
} from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';
import { engineRest } from '../../camunda/support.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:baton="https://baton.dev/schema/bpmn/1.0"`;

/** start -> each (parallel multi-instance subprocess: pick -> pack) -> after -> end; `extra` goes into the process */
function process(id: string, loop: string, task: (name: string) => string, extra = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:subProcess id="each">
      ${loop}
      <bpmn:startEvent id="s_in" />
      ${task('pick')}
      ${task('pack')}
      <bpmn:endEvent id="e_in" />
      <bpmn:sequenceFlow id="i1" sourceRef="s_in" targetRef="pick" />
      <bpmn:sequenceFlow id="i2" sourceRef="pick" targetRef="pack" />
      <bpmn:sequenceFlow id="i3" sourceRef="pack" targetRef="e_in" />
    </bpmn:subProcess>
    <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="each" />
    <bpmn:sequenceFlow id="f2" sourceRef="each" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
    ${extra}
  </bpmn:process>
</bpmn:definitions>`;
}

const camundaTask = (id: string) => (name: string) =>
  `<bpmn:serviceTask id="${name}" camunda:type="external" camunda:topic="${id}-${name}" />`;
const zeebeTask = (id: string) => (name: string) =>
  `<bpmn:serviceTask id="${name}"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-${name}" /></bpmn:extensionElements></bpmn:serviceTask>`;

const parallel = (attributes = '', inner = '') =>
  `<bpmn:multiInstanceLoopCharacteristics camunda:collection="items" camunda:elementVariable="item" baton:outputCollection="packed" baton:outputElement="= picked" ${attributes}>${inner}</bpmn:multiInstanceLoopCharacteristics>`;

/** Waits until `n` tasks of the topic are locked by one fetch loop; answers them by element. */
async function fetchAll(topic: string, n: number): Promise<LockedTask[]> {
  const got: LockedTask[] = [];
  await waitFor(
    async () => {
      got.push(...(await fetchTasks(t.api, 'w', [topic])));
      return got.length >= n ? true : undefined;
    },
    10_000,
    `${n} tasks on ${topic}`,
  );
  expect(got).toHaveLength(n);
  return got;
}

async function ok(res: Promise<{ status: number; body: unknown }>): Promise<void> {
  const answer = await res;
  expect(answer.status, JSON.stringify(answer.body)).toBe(204);
}

async function calledOf(id: string, n: number): Promise<any[]> {
  return waitFor(
    async () => {
      const called = (await instanceOf(t.api, id)).calledInstances as any[];
      return called.length >= n ? called : undefined;
    },
    10_000,
    `${n} elements of ${id}`,
  );
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('parallel multi-instance subprocesses', () => {
  it('given three elements, then all run pick then pack at once, each with its own item and loopCounter, and the results land in input order', async () => {
    await deploy(t.api, process('pmi_three', parallel(), camundaTask('pmi_three')));
    const id = await start(t.api, 'pmi_three', { variables: { items: ['a', 'b', 'c'] } });
    // All three elements wait at pick together; none has reached pack.
    const picks = await fetchAll('pmi_three-pick', 3);
    expect(picks.map((p) => [p.variables.item, p.variables.loopCounter]).sort()).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 2],
    ]);
    expect(await fetchTasks(t.api, 'w', ['pmi_three-pack'])).toEqual([]);
    // Each element's pack follows its own pick, whatever the others do: completed out of order.
    for (const item of ['c', 'a', 'b']) {
      const pick = picks.find((p) => p.variables.item === item)!;
      await ok(complete(t.api, pick, 'w', { picked: item.toUpperCase() }));
      const pack = await fetchOne(t.api, 'w', 'pmi_three-pack');
      expect(pack.variables).toMatchObject({ item, picked: item.toUpperCase() });
      if (item !== 'b') expect(await fetchTasks(t.api, 'w', ['pmi_three-after'])).toEqual([]);
      await ok(complete(t.api, pack, 'w'));
    }
    const after = await fetchOne(t.api, 'w', 'pmi_three-after');
    expect(after.variables.packed).toEqual(['A', 'B', 'C']);
    // The element variable and loopCounter are the elements' own.
    expect(after.variables).not.toHaveProperty('item');
    expect(after.variables).not.toHaveProperty('loopCounter');
    await ok(complete(t.api, after, 'w'));
    await waitForStatus(t.api, id, 'completed');
    const elements = await calledOf(id, 3);
    expect(elements.map((e) => [e.stepId, e.loopCounter, e.status])).toEqual([
      ['each', 0, 'completed'],
      ['each', 1, 'completed'],
      ['each', 2, 'completed'],
    ]);
    // Each element is an instance of the body's definition, linked to its process.
    const child = await instanceOf(t.api, elements[0].instanceId);
    expect(child).toMatchObject({ definitionKey: 'pmi_three:each', parent: { instanceId: id, stepId: 'each' } });
    // The body is deployed with its process, but listed as no process of its own.
    expect((await t.api.get('/api/definitions/pmi_three:each')).status).toBe(200);
    const listed = (await t.api.get('/api/definitions')).body.items as { key: string }[];
    expect(listed.map((d) => d.key)).toContain('pmi_three');
    expect(listed.map((d) => d.key)).not.toContain('pmi_three:each');
    const camunda = await engineRest(t.url, 'GET', '/process-definition?keysIn=pmi_three,pmi_three:each');
    expect(camunda.body.map((d: { key: string }) => d.key)).toEqual(['pmi_three']);
  });

  it('given a completion condition, then it ends after two elements and the third element is canceled', async () => {
    const loop = parallel('', '<bpmn:completionCondition>${nrOfCompletedInstances &gt;= 2}</bpmn:completionCondition>');
    await deploy(t.api, process('pmi_enough', loop, camundaTask('pmi_enough')));
    const id = await start(t.api, 'pmi_enough', { variables: { items: ['a', 'b', 'c'] } });
    const picks = await fetchAll('pmi_enough-pick', 3);
    for (const item of ['b', 'c']) {
      await ok(
        complete(
          t.api,
          picks.find((p) => p.variables.item === item)!,
          'w',
          { picked: item },
        ),
      );
      await ok(complete(t.api, await fetchOne(t.api, 'w', 'pmi_enough-pack'), 'w'));
    }
    const after = await fetchOne(t.api, 'w', 'pmi_enough-after');
    expect(after.variables.packed).toEqual([null, 'b', 'c']);
    const elements = await calledOf(id, 3);
    expect(elements.map((e) => e.status)).toEqual(['canceled', 'completed', 'completed']);
    // The canceled element's worker finds its task gone.
    const late = await complete(
      t.api,
      picks.find((p) => p.variables.item === 'a')!,
      'w',
      { picked: 'a' },
    );
    expect(late.status).toBeGreaterThanOrEqual(400);
    expect((await instanceOf(t.api, id)).variables).not.toHaveProperty('picked', 'a');
  });

  it('given Camunda 8 loop characteristics, then each element gets inputElement, loopCounter from 1, and outputElement fills outputCollection', async () => {
    const loop = `<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=orders" inputElement="order" outputCollection="labels" outputElement="=label" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>`;
    await deploy(t.api, process('pmi_zeebe', loop, zeebeTask('pmi_zeebe')));
    await start(t.api, 'pmi_zeebe', { variables: { orders: [{ n: 1 }, { n: 2 }] } });
    const picks = await fetchAll('pmi_zeebe-pick', 2);
    expect(picks.map((p) => [p.variables.order, p.variables.loopCounter]).sort((a, b) => Number(a[1]) - Number(b[1]))).toEqual([
      [{ n: 1 }, 1],
      [{ n: 2 }, 2],
    ]);
    for (const pick of picks) {
      await ok(complete(t.api, pick, 'w', { label: `L${(pick.variables.order as { n: number }).n}` }));
      await ok(complete(t.api, await fetchOne(t.api, 'w', 'pmi_zeebe-pack'), 'w'));
    }
    const after = await fetchOne(t.api, 'w', 'pmi_zeebe-after');
    expect(after.variables.labels).toEqual(['L1', 'L2']);
    expect(after.variables).not.toHaveProperty('order');
  });

  it('given elements that write and elements that only read a variable, then the writes reach the process and no element writes back a stale copy', async () => {
    await deploy(t.api, process('pmi_vars', parallel(), camundaTask('pmi_vars')));
    const id = await start(t.api, 'pmi_vars', { variables: { items: ['a', 'b'], shared: 'start' } });
    const picks = await fetchAll('pmi_vars-pick', 2);
    const [first, second] = [picks.find((p) => p.variables.item === 'a')!, picks.find((p) => p.variables.item === 'b')!];
    // Element a writes shared and ends; element b read shared as "start" and ends afterwards.
    await ok(complete(t.api, first, 'w', { shared: 'from a', picked: 'a' }));
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'pmi_vars-pack'), 'w'));
    await waitFor(
      async () => ((await instanceOf(t.api, id)).variables.shared === 'from a' ? true : undefined),
      10_000,
      'a write',
    );
    await ok(complete(t.api, second, 'w', { picked: 'b' }));
    await ok(complete(t.api, await fetchOne(t.api, 'w', 'pmi_vars-pack'), 'w'));
    const after = await fetchOne(t.api, 'w', 'pmi_vars-after');
    expect(after.variables).toMatchObject({ shared: 'from a', packed: ['a', 'b'] });
  });

  it('given input mappings on the subprocess, in both dialects, then each element gets them as its own locals over its element variable, its output element reads them, and none reaches the process', async () => {
    const zeebeLoop = `<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=orders" inputElement="order" outputCollection="labels" outputElement="=label + &quot;:&quot; + picked" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>`;
    const zeebe = process('pmi_in_zeebe', zeebeLoop, zeebeTask('pmi_in_zeebe')).replace(
      '<bpmn:subProcess id="each">',
      '<bpmn:subProcess id="each"><bpmn:extensionElements><zeebe:ioMapping><zeebe:input source="=upper case(order.sku)" target="label" /><zeebe:input source="=loopCounter * 10" target="rank" /></zeebe:ioMapping></bpmn:extensionElements>',
    );
    await deployMappingsRun(t.api, zeebe);
    const id = await start(t.api, 'pmi_in_zeebe', { variables: { orders: [{ sku: 'a' }, { sku: 'b' }], label: 'mine' } });
    const picks = await fetchAll('pmi_in_zeebe-pick', 2);
    expect(picks.map((p) => [p.variables.label, p.variables.rank]).sort()).toEqual([
      ['A', 10],
      ['B', 20],
    ]);
    for (const pick of picks) {
      // A write to an input's name stays the element's; another name reaches the process.
      await ok(complete(t.api, pick, 'w', { picked: `p${pick.variables.rank}`, label: `${pick.variables.label}!` }));
      await ok(complete(t.api, await fetchOne(t.api, 'w', 'pmi_in_zeebe-pack'), 'w'));
    }
    const after = await fetchOne(t.api, 'w', 'pmi_in_zeebe-after');
    expect(after.variables.labels).toEqual(['A!:p10', 'B!:p20']);
    expect(after.variables.label).toBe('mine');
    expect(after.variables).not.toHaveProperty('rank');
    await ok(complete(t.api, after, 'w'));
    await waitForStatus(t.api, id, 'completed');

    const camunda = process('pmi_in_c7', parallel(), camundaTask('pmi_in_c7')).replace(
      '<bpmn:subProcess id="each">',
      '<bpmn:subProcess id="each"><bpmn:extensionElements><camunda:inputOutput><camunda:inputParameter name="shelf">${item}</camunda:inputParameter></camunda:inputOutput></bpmn:extensionElements>',
    );
    await deploy(t.api, camunda);
    const c7 = await start(t.api, 'pmi_in_c7', { variables: { items: ['x', 'y'] } });
    const c7picks = await fetchAll('pmi_in_c7-pick', 2);
    expect(c7picks.map((p) => p.variables.shelf).sort()).toEqual(['x', 'y']);
    for (const pick of c7picks) {
      await ok(complete(t.api, pick, 'w', { picked: `${pick.variables.shelf}-shelf` }));
      await ok(complete(t.api, await fetchOne(t.api, 'w', 'pmi_in_c7-pack'), 'w'));
    }
    const c7after = await fetchOne(t.api, 'w', 'pmi_in_c7-after');
    expect(c7after.variables.packed).toEqual(['x-shelf', 'y-shelf']);
    expect(c7after.variables).not.toHaveProperty('shelf');
    await ok(complete(t.api, c7after, 'w'));
    await waitForStatus(t.api, c7, 'completed');
  });

  it('given an input mapping that fails for one element, then an io_mapping incident on the subprocess and no element starts; the retry after fixing the variable starts them all', async () => {
    const zeebeLoop = `<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=orders" inputElement="order" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>`;
    await deploy(
      t.api,
      process('pmi_in_bad', zeebeLoop, zeebeTask('pmi_in_bad')).replace(
        '<bpmn:subProcess id="each">',
        '<bpmn:subProcess id="each"><bpmn:extensionElements><zeebe:ioMapping><zeebe:input source="=2 in (1..order.max)" target="fits" /></zeebe:ioMapping></bpmn:extensionElements>',
      ),
    );
    const id = await start(t.api, 'pmi_in_bad', { variables: { orders: [{ max: 3 }, { max: 'x' }] } });
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'each', kind: 'io_mapping' });
    expect((await instanceOf(t.api, id)).calledInstances).toEqual([]);
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { orders: [{ max: 3 }, { max: 1 }] } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const picks = await fetchAll('pmi_in_bad-pick', 2);
    expect(picks.map((p) => p.variables.fits).sort()).toEqual([false, true]);
  });

  it('given a BPMN error thrown inside the body, then the subprocess boundary catches it and every element ends', async () => {
    const body = (name: string) =>
      name === 'pack'
        ? `<bpmn:serviceTask id="pack" camunda:type="external" camunda:topic="pmi_error-pack" />`
        : `<bpmn:serviceTask id="pick" camunda:type="external" camunda:topic="pmi_error-pick" />`;
    const extra = `<bpmn:boundaryEvent id="failed" attachedToRef="each"><bpmn:errorEventDefinition errorRef="OutOfStock" /></bpmn:boundaryEvent>
    <bpmn:serviceTask id="reorder" camunda:type="external" camunda:topic="pmi_error-reorder" />
    <bpmn:endEvent id="end2" />
    <bpmn:sequenceFlow id="b1" sourceRef="failed" targetRef="reorder" />
    <bpmn:sequenceFlow id="b2" sourceRef="reorder" targetRef="end2" />`;
    const xml = process('pmi_error', parallel(), body, extra).replace(
      '</bpmn:definitions>',
      '<bpmn:error id="OutOfStock" errorCode="OUT_OF_STOCK" /></bpmn:definitions>',
    );
    await deploy(t.api, xml);
    const id = await start(t.api, 'pmi_error', { variables: { items: ['a', 'b'] } });
    const picks = await fetchAll('pmi_error-pick', 2);
    const res = await t.api.post(`/api/external-tasks/${picks[0]!.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: picks[0]!.lockToken,
      errorCode: 'OUT_OF_STOCK',
    });
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    const reorder = await fetchOne(t.api, 'w', 'pmi_error-reorder');
    expect(reorder.instanceId).toBe(id);
    const elements = await waitFor(
      async () => {
        const called = await calledOf(id, 2);
        return called.every((c) => c.status !== 'running') ? called : undefined;
      },
      10_000,
      'both elements ended',
    );
    // The interrupting boundary ends the subprocess: the element that threw and the one still at pick.
    expect(elements.map((e) => e.status)).toEqual(['canceled', 'canceled']);
    expect((await complete(t.api, picks[1]!, 'w', { picked: 'late' })).status).toBeGreaterThanOrEqual(400);
    expect(await fetchTasks(t.api, 'w', ['pmi_error-pack', 'pmi_error-after'])).toEqual([]);
  });

  it('given the process canceled while its elements run, then every element is canceled and its tasks are gone', async () => {
    await deploy(t.api, process('pmi_cancel', parallel(), camundaTask('pmi_cancel')));
    const id = await start(t.api, 'pmi_cancel', { variables: { items: ['a', 'b', 'c'] } });
    const picks = await fetchAll('pmi_cancel-pick', 3);
    expect((await t.api.post(`/api/instances/${id}/cancel`, {})).status).toBe(200);
    const elements = await calledOf(id, 3);
    for (const element of elements) await waitForStatus(t.api, element.instanceId, 'canceled');
    for (const pick of picks) expect((await complete(t.api, pick, 'w', { picked: 'x' })).status).toBeGreaterThanOrEqual(400);
  });

  it('given the body definition started on its own, then it is refused naming the process to start', async () => {
    await deploy(t.api, process('pmi_direct', parallel(), camundaTask('pmi_direct')));
    const res = await t.api.post('/api/instances', { definitionKey: 'pmi_direct:each' });
    expect(res.status).toBe(409);
    expect(res.body.message).toContain('Start process pmi_direct');
  });

  it('given output mappings on the subprocess (Camunda 8), then they run as each element ends, over what its body saw; one that fails keeps the element in the incident, and the retry maps it and the others that ended meanwhile', async () => {
    const loop = `<bpmn:extensionElements><zeebe:ioMapping>
        <zeebe:output source="=total + weight" target="total" />
        <zeebe:output source="=weight in (1..max)" target="fits" />
      </zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=items" inputElement="item" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>`;
    await deployMappingsRun(t.api, process('pmi_out', loop, zeebeTask('pmi_out')));
    const weigh = async (id: string, weights: Record<string, number>) => {
      const picks = await fetchAll('pmi_out-pick', Object.keys(weights).length);
      for (const pick of picks) await ok(complete(t.api, pick, 'w', { weight: weights[String(pick.variables.item)] }));
      return fetchAll('pmi_out-pack', Object.keys(weights).length);
    };
    const id = await start(t.api, 'pmi_out', { variables: { items: ['a', 'b', 'c'], total: 0, max: 5 } });
    for (const pack of await weigh(id, { a: 1, b: 2, c: 4 })) await ok(complete(t.api, pack, 'w'));
    const after = await fetchOne(t.api, 'w', 'pmi_out-after');
    // Each element's outputs read the total the elements before it wrote.
    expect(after.variables).toMatchObject({ total: 7, fits: true });
    await ok(complete(t.api, after, 'w'));
    await waitForStatus(t.api, id, 'completed');

    const bad = await start(t.api, 'pmi_out', { variables: { items: ['a', 'b'], total: 0, max: 'x' } });
    const packs = await weigh(bad, { a: 1, b: 2 });
    const byItem = (item: string) => packs.find((x) => x.variables.item === item)!;
    await ok(complete(t.api, byItem('a'), 'w'));
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'each', kind: 'io_mapping' });
    expect((await instanceOf(t.api, bad)).variables).toMatchObject({ total: 0 });
    await ok(complete(t.api, byItem('b'), 'w'));
    await waitFor(
      async () => ((await calledOf(bad, 2)).every((c) => c.status === 'completed') ? true : undefined),
      10_000,
      'both elements to end',
    );
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const fixed = await fetchOne(t.api, 'w', 'pmi_out-after');
    expect(fixed.variables).toMatchObject({ total: 3, fits: true, max: 5 });
  });

  it('given a body that starts on a message, then deploy answers 400 naming the element', async () => {
    const messageStart = process('pmi_message', parallel(), camundaTask('pmi_message'))
      .replace(
        '<bpmn:startEvent id="s_in" />',
        '<bpmn:startEvent id="s_in"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>',
      )
      .replace('</bpmn:definitions>', '<bpmn:message id="M" name="m" /></bpmn:definitions>');
    const refused = await t.api.post('/api/definitions', { xml: messageStart });
    expect(refused.status).toBe(400);
    expect((refused.body.details as { elementId: string }[]).map((d) => d.elementId)).toContain('s_in');
    for (const key of ['pmi_message', 'pmi_message:each']) expect((await t.api.get(`/api/definitions/${key}`)).status).toBe(404);
  });

  it('given a lint of a file with one, then the tasks inside its body are checked for workers like any other', async () => {
    const res = await t.api.post('/api/definitions/lint', { xml: process('pmi_lint', parallel(), camundaTask('pmi_lint')) });
    expect(res.status).toBe(200);
    const unserved = (res.body.warnings as { elementId: string; code?: string }[]).filter(
      (w) => w.code === 'topic-without-worker',
    );
    expect(unserved.map((w) => w.elementId).sort()).toEqual(['after', 'pack', 'pick']);
  });
});
