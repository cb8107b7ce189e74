// Event subprocesses and repeating boundaries inside loops against a real PostgreSQL, through the
// HTTP API: each pass arms them afresh (with the pass's variables); a non-interrupting one fires
// every time, in the pass it was armed in, and the pass waits for what it runs; an interrupting
// one ends that pass's subprocess and the loop goes on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineDefinitions, inlineFlow, inlineTask } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

const KEY = 'loopesp';
/** s -> review -> decide -(rejected)-> rework [fix; on message "note": log; on error "broken": recover] -> review; decide -(approved)-> e */
const xml = inlineDefinitions(
  KEY,
  [
    '<bpmn:startEvent id="s" />',
    inlineTask('review', KEY),
    '<bpmn:exclusiveGateway id="decide" default="approved" />',
    `<bpmn:subProcess id="rework">
      <bpmn:startEvent id="rs" />${inlineTask('fix', KEY)}<bpmn:endEvent id="re" />
      ${inlineFlow('r1', 'rs', 'fix')}${inlineFlow('r2', 'fix', 're')}
      <bpmn:subProcess id="noted" triggeredByEvent="true">
        <bpmn:startEvent id="ns" isInterrupting="false"><bpmn:messageEventDefinition messageRef="M_note" /></bpmn:startEvent>
        ${inlineTask('log', KEY)}<bpmn:endEvent id="ne" />${inlineFlow('n1', 'ns', 'log')}${inlineFlow('n2', 'log', 'ne')}
      </bpmn:subProcess>
      <bpmn:subProcess id="failed" triggeredByEvent="true">
        <bpmn:startEvent id="fs"><bpmn:errorEventDefinition errorRef="E_broken" /></bpmn:startEvent>
        ${inlineTask('recover', KEY)}<bpmn:endEvent id="fe" />${inlineFlow('x1', 'fs', 'recover')}${inlineFlow('x2', 'recover', 'fe')}
      </bpmn:subProcess>
    </bpmn:subProcess>`,
    '<bpmn:endEvent id="e" />',
    inlineFlow('f1', 's', 'review'),
    inlineFlow('f2', 'review', 'decide'),
    `<bpmn:sequenceFlow id="rejected" sourceRef="decide" targetRef="rework"><bpmn:conditionExpression>=approved = false</bpmn:conditionExpression></bpmn:sequenceFlow>`,
    inlineFlow('approved', 'decide', 'e'),
    inlineFlow('again', 'rework', 'review'),
  ],
  `<bpmn:message id="M_note" name="note"><bpmn:extensionElements><zeebe:subscription xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" correlationKey="=orderId" /></bpmn:extensionElements></bpmn:message>
  <bpmn:error id="E_broken" errorCode="broken" />`,
);

/** s -> each (sequential over items: pack; on message "cancel-item" for this item: interrupting, skip it) -> e */
const EACH = 'loopespmi';
const each = inlineDefinitions(
  EACH,
  [
    '<bpmn:startEvent id="s" />',
    `<bpmn:subProcess id="each">
      <bpmn:multiInstanceLoopCharacteristics isSequential="true" camunda:collection="items" camunda:elementVariable="item" />
      <bpmn:startEvent id="es" />${inlineTask('pack', EACH)}<bpmn:endEvent id="ee" />
      ${inlineFlow('e1', 'es', 'pack')}${inlineFlow('e2', 'pack', 'ee')}
      <bpmn:subProcess id="dropped" triggeredByEvent="true">
        <bpmn:startEvent id="ds"><bpmn:messageEventDefinition messageRef="M_drop" /></bpmn:startEvent>
        <bpmn:endEvent id="de" />${inlineFlow('d1', 'ds', 'de')}
      </bpmn:subProcess>
    </bpmn:subProcess>`,
    '<bpmn:endEvent id="e" />',
    inlineFlow('f1', 's', 'each'),
    inlineFlow('f2', 'each', 'e'),
  ],
  `<bpmn:message id="M_drop" name="drop"><bpmn:extensionElements><zeebe:subscription xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" correlationKey="=item" /></bpmn:extensionElements></bpmn:message>`,
);

/** s -> review (non-interrupting message boundary "nudge" -> remind -> end) -> decide -(rejected)-> review; -(approved)-> e */
const NUDGE = 'loopnudge';
const nudge = inlineDefinitions(
  NUDGE,
  [
    '<bpmn:startEvent id="s" />',
    inlineTask('review', NUDGE),
    '<bpmn:boundaryEvent id="nudged" attachedToRef="review" cancelActivity="false"><bpmn:messageEventDefinition messageRef="M_nudge" /></bpmn:boundaryEvent>',
    inlineTask('remind', NUDGE),
    '<bpmn:endEvent id="re" />',
    '<bpmn:exclusiveGateway id="decide" default="approved" />',
    '<bpmn:endEvent id="e" />',
    inlineFlow('f1', 's', 'review'),
    inlineFlow('f2', 'review', 'decide'),
    `<bpmn:sequenceFlow id="rejected" sourceRef="decide" targetRef="review"><bpmn:conditionExpression>=approved = false</bpmn:conditionExpression></bpmn:sequenceFlow>`,
    inlineFlow('approved', 'decide', 'e'),
    inlineFlow('n1', 'nudged', 'remind'),
    inlineFlow('n2', 'remind', 're'),
  ],
  `<bpmn:message id="M_nudge" name="nudge"><bpmn:extensionElements><zeebe:subscription xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" correlationKey="=orderId" /></bpmn:extensionElements></bpmn:message>`,
);

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, xml);
  await deploy(t.api, each);
  await deploy(t.api, nudge);
});
afterAll(async () => {
  await t?.close();
});

/** The firing of a non-interrupting event subprocess that child instance `childId` runs: its step, pass and firing. */
async function firingOf(id: string, childId: string): Promise<unknown> {
  const child = ((await instanceOf(t.api, id)).calledInstances as any[]).find((c) => c.instanceId === childId);
  return child && { stepId: child.stepId, scopePath: child.scopePath, loopCounter: child.loopCounter };
}

async function publish(orderId: string): Promise<void> {
  const res = await t.api.post('/api/messages', { name: 'note', correlationKey: orderId });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
}

describe('event subprocesses inside a loop', () => {
  it('given two passes of the subprocess, then each pass arms its event subprocesses afresh: a note logged in each, an error recovered in the second', async () => {
    const id = await start(t.api, KEY, { variables: { orderId: 'o-1' } });
    const ok = async (p: Promise<{ status: number; body: unknown }>) => expect((await p).status).toBe(204);
    // Pass 1: a note while fixing; the fix completes first, and the pass waits for the note's log.
    await ok(complete(t.api, await fetchOne(t.api, 'w', `${KEY}-review`), 'w', { approved: false }));
    const fix1 = await fetchOne(t.api, 'w', `${KEY}-fix`);
    await publish('o-1');
    const log1 = await fetchOne(t.api, 'w', `${KEY}-log`);
    expect(await firingOf(id, log1.instanceId)).toEqual({ stepId: 'noted', scopePath: '/loop:review#1', loopCounter: 1 });
    await ok(complete(t.api, fix1, 'w'));
    await waitFor(
      async () =>
        (await instanceOf(t.api, id)).steps.find((s: any) => s.stepId === 'fix')?.status === 'completed' ? true : undefined,
      10_000,
      'the fix of pass 1',
    );
    expect(await fetchTasks(t.api, 'w', [`${KEY}-review`])).toEqual([]);
    await ok(complete(t.api, log1, 'w'));
    // Pass 2: a note again, then the fix fails with a BPMN error the interrupting one catches.
    await ok(complete(t.api, await fetchOne(t.api, 'w', `${KEY}-review`), 'w', { approved: false }));
    const fix2 = await fetchOne(t.api, 'w', `${KEY}-fix`);
    await publish('o-1');
    const log2 = await fetchOne(t.api, 'w', `${KEY}-log`);
    expect(await firingOf(id, log2.instanceId)).toEqual({ stepId: 'noted', scopePath: '/loop:review#2', loopCounter: 1 });
    await ok(complete(t.api, log2, 'w'));
    const thrown = await t.api.post(`/api/external-tasks/${fix2.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: fix2.lockToken,
      errorCode: 'broken',
    });
    expect(thrown.status, JSON.stringify(thrown.body)).toBeLessThan(300);
    await ok(complete(t.api, await fetchOne(t.api, 'w', `${KEY}-recover`), 'w'));
    // Pass 3 approves.
    await ok(complete(t.api, await fetchOne(t.api, 'w', `${KEY}-review`), 'w', { approved: true }));
    await waitForStatus(t.api, id, 'completed');
    expect(await fetchTasks(t.api, 'w', [`${KEY}-log`, `${KEY}-fix`, `${KEY}-recover`])).toEqual([]);
    const history = (await t.api.get(`/api/instances/${id}/history?limit=1000`)).body.items as {
      kind: string;
      stepId?: string;
    }[];
    const count = (kind: string, stepId: string) => history.filter((e) => e.kind === kind && e.stepId === stepId).length;
    expect([
      count('step:completed', 'review'),
      count('eventSubProcess:firing_completed', 'noted'),
      count('step:completed', 'fix'),
      count('step:completed', 'recover'),
    ]).toEqual([3, 2, 1, 1]);
    // The subprocess of pass 1 ended only after the note's log: its scope waits for its firings.
    const at = (kind: string, stepId: string) => history.findIndex((e) => e.kind === kind && e.stepId === stepId);
    expect(at('step:completed', 'rework')).toBeGreaterThan(at('eventSubProcess:firing_completed', 'noted'));
  });

  it('given a sequential multi-instance subprocess holding an interrupting message event subprocess, then each element subscribes with its own item and a drop ends only that element', async () => {
    const id = await start(t.api, EACH, { variables: { items: ['x', 'y', 'z'] } });
    const ok = async (p: Promise<{ status: number; body: unknown }>) => expect((await p).status).toBe(204);
    await ok(complete(t.api, await fetchOne(t.api, 'w', `${EACH}-pack`), 'w'));
    // Element y is dropped while it waits at pack; its task is gone and element z runs.
    const packY = await fetchOne(t.api, 'w', `${EACH}-pack`);
    expect(packY.variables.item).toBe('y');
    const res = await t.api.post('/api/messages', { name: 'drop', correlationKey: 'y' });
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    const packZ = await fetchOne(t.api, 'w', `${EACH}-pack`);
    expect(packZ.variables.item).toBe('z');
    expect((await complete(t.api, packY, 'w')).status).toBeGreaterThanOrEqual(400);
    await ok(complete(t.api, packZ, 'w'));
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${id}/history?limit=1000`)).body.items as {
      kind: string;
      stepId?: string;
    }[];
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'pack')).toHaveLength(2);
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'dropped')).toHaveLength(1);
  });

  it('given a non-interrupting message boundary in a loop, then it fires every time in each pass and the pass waits for its paths', async () => {
    const id = await start(t.api, NUDGE, { variables: { orderId: 'n-1' } });
    const ok = async (p: Promise<{ status: number; body: unknown }>) => expect((await p).status).toBe(204);
    const send = async () =>
      expect((await t.api.post('/api/messages', { name: 'nudge', correlationKey: 'n-1' })).status).toBeLessThan(300);
    const review1 = await fetchOne(t.api, 'w', `${NUDGE}-review`);
    await send();
    const remind1 = await fetchOne(t.api, 'w', `${NUDGE}-remind`);
    await send();
    await ok(complete(t.api, remind1, 'w'));
    const remind2 = await fetchOne(t.api, 'w', `${NUDGE}-remind`);
    await ok(complete(t.api, remind2, 'w'));
    await ok(complete(t.api, review1, 'w', { approved: false }));
    const review2 = await fetchOne(t.api, 'w', `${NUDGE}-review`);
    await send();
    const remind3 = await fetchOne(t.api, 'w', `${NUDGE}-remind`);
    expect(remind3.scopePath).toBe('/loop:review#2/nudged#1');
    await ok(complete(t.api, review2, 'w', { approved: true }));
    // The last pass waits for the firing's path before the loop ends.
    expect((await instanceOf(t.api, id)).status).toBe('running');
    await ok(complete(t.api, remind3, 'w'));
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${id}/history?limit=1000`)).body.items as {
      kind: string;
      stepId?: string;
    }[];
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'remind')).toHaveLength(3);
  });
});
