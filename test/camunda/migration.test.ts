// Camunda 7's migration, modification, activity-instance tree and incident annotations through
// /engine-rest against a real PostgreSQL: a generated plan validates and moves instances that
// finish on the new version, an invalid plan is refused naming the activity and changes nothing,
// executeAsync runs a Baton batch to the end, a modification repairs an instance, the tree nests
// a task inside its subprocess, and an annotation is set and cleared.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, instanceOf, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const rest = (method: string, path: string, body?: unknown) => engineRest(t.url, method, path, body);

/** start -> each of `tasks` in turn -> end */
function sequence(key: string, tasks: string[]): string {
  const ids = ['start', ...tasks, 'end'];
  return inlineDefinitions(key, [
    '<bpmn:startEvent id="start" />',
    ...tasks.map((id) => task(id, key)),
    '<bpmn:endEvent id="end" />',
    ...ids.slice(1).map((id, i) => flow(`f_${ids[i]}_${id}`, ids[i]!, id)),
  ]);
}

async function definitionIds(key: string): Promise<string[]> {
  const res = await rest('GET', `/process-definition?key=${key}&sortBy=version&sortOrder=asc`);
  return res.body.map((d: { id: string }) => d.id);
}

describe('migration', () => {
  it('given two versions, when a generated plan is validated and executed, then the instances move and finish on the new version', async () => {
    await deploy(t.api, sequence('cm-mig', ['a', 'b']));
    const first = await startByKey(t.url, 'cm-mig');
    const second = await startByKey(t.url, 'cm-mig');
    await deploy(t.api, sequence('cm-mig', ['a', 'audit', 'b']));
    const [v1, v2] = await definitionIds('cm-mig');

    const plan = await rest('POST', '/migration/generate', { sourceProcessDefinitionId: v1, targetProcessDefinitionId: v2 });
    expect(plan.status, JSON.stringify(plan.body)).toBe(200);
    expect(plan.body).toMatchObject({ sourceProcessDefinitionId: v1, targetProcessDefinitionId: v2, variables: null });
    expect(plan.body.instructions).toContainEqual({
      sourceActivityIds: ['a'],
      targetActivityIds: ['a'],
      updateEventTrigger: false,
    });

    const report = await rest('POST', '/migration/validate', plan.body);
    expect(report.status).toBe(200);
    expect(report.body.instructionReports.every((r: { failures: string[] }) => r.failures.length === 0)).toBe(true);

    const executed = await rest('POST', '/migration/execute', {
      migrationPlan: plan.body,
      processInstanceIds: [first],
      processInstanceQuery: { businessKey: null, processInstanceIds: [second] },
    });
    expect(executed.status, JSON.stringify(executed.body)).toBe(204);
    for (const id of [first, second]) expect((await instanceOf(t.api, id)).version).toBe(2);
    for (const topic of ['cm-mig-a', 'cm-mig-a', 'cm-mig-audit', 'cm-mig-audit', 'cm-mig-b', 'cm-mig-b'])
      expect((await complete(t.api, await fetchOne(t.api, 'w', topic), 'w')).status).toBe(204);
    await waitForStatus(t.api, first, 'completed');
    await waitForStatus(t.api, second, 'completed');
  });

  it('given an instruction onto a missing activity or an instance it cannot move, then the refusal names the activity and nothing moves', async () => {
    await deploy(t.api, sequence('cm-bad', ['a']));
    const id = await startByKey(t.url, 'cm-bad');
    await deploy(t.api, sequence('cm-bad', ['renamed']));
    const [v1, v2] = await definitionIds('cm-bad');
    const wrong = {
      sourceProcessDefinitionId: v1,
      targetProcessDefinitionId: v2,
      instructions: [{ sourceActivityIds: ['a'], targetActivityIds: ['nope'] }],
    };

    const report = await rest('POST', '/migration/validate', wrong);
    expect(report.body.instructionReports[0].failures).toEqual([
      expect.stringContaining("Target activity 'nope' does not exist"),
    ]);
    const refused = await rest('POST', '/migration/execute', { migrationPlan: wrong, processInstanceIds: [id] });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ type: 'MigrationPlanValidationException', message: expect.stringContaining('nope') });

    // A valid plan that leaves the open task `a` without a counterpart: the dry run refuses it.
    const generated = await rest('POST', '/migration/generate', { sourceProcessDefinitionId: v1, targetProcessDefinitionId: v2 });
    const stuck = await rest('POST', '/migration/execute', { migrationPlan: generated.body, processInstanceIds: [id] });
    expect(stuck.status).toBe(400);
    expect(stuck.body).toMatchObject({
      type: 'MigratingProcessInstanceValidationException',
      message: expect.stringContaining('a:'),
    });
    expect((await instanceOf(t.api, id)).version).toBe(1);

    await deploy(t.api, sequence('cm-other', ['a']));
    const [other] = await definitionIds('cm-other');
    const across = await rest('POST', '/migration/generate', { sourceProcessDefinitionId: v1, targetProcessDefinitionId: other });
    expect(across.status).toBe(400);
    expect(across.body.message).toContain('versions of its own process');
  });

  it('given instances of the source version, when executeAsync runs, then a Baton migrate batch moves them all', async () => {
    await deploy(t.api, sequence('cm-async', ['a']));
    const ids = [await startByKey(t.url, 'cm-async'), await startByKey(t.url, 'cm-async')];
    await deploy(t.api, sequence('cm-async', ['a', 'b']));
    const [v1, v2] = await definitionIds('cm-async');
    const plan = await rest('POST', '/migration/generate', { sourceProcessDefinitionId: v1, targetProcessDefinitionId: v2 });

    const narrowed = await rest('POST', '/migration/executeAsync', { migrationPlan: plan.body, processInstanceIds: ids });
    expect(narrowed.status).toBe(400);
    const batch = await rest('POST', '/migration/executeAsync', {
      migrationPlan: plan.body,
      processInstanceQuery: { processDefinitionId: v1 },
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body).toMatchObject({ type: 'instance-migration', tenantId: null, suspended: false });
    const done = await waitFor(async () => {
      const b = (await t.api.get(`/api/batches/${batch.body.id}`)).body;
      return b.state === 'completed' ? b : undefined;
    });
    expect(done).toMatchObject({ total: 2, done: 2 });
    for (const id of ids) expect((await instanceOf(t.api, id)).version).toBe(2);
  });
});

describe('modification and activity instances', () => {
  it('given a task open inside a subprocess, then the tree nests it, and startBefore + cancel moves the instance on', async () => {
    const key = 'cm-sub';
    await deploy(
      t.api,
      inlineDefinitions(key, [
        '<bpmn:startEvent id="start" />',
        `<bpmn:subProcess id="sub">
          <bpmn:startEvent id="subStart" />
          ${task('work', key)}
          <bpmn:endEvent id="subEnd" />
          ${flow('s1', 'subStart', 'work')}
          ${flow('s2', 'work', 'subEnd')}
        </bpmn:subProcess>`,
        task('after', key),
        '<bpmn:endEvent id="end" />',
        flow('f1', 'start', 'sub'),
        flow('f2', 'sub', 'after'),
        flow('f3', 'after', 'end'),
      ]),
    );
    const id = await startByKey(t.url, key);
    const tree = await rest('GET', `/process-instance/${id}/activity-instances`);
    expect(tree.status).toBe(200);
    expect(tree.body).toMatchObject({ id, parentActivityInstanceId: null, activityId: key, activityType: 'processDefinition' });
    expect(tree.body.childActivityInstances).toHaveLength(1);
    const sub = tree.body.childActivityInstances[0];
    expect(sub).toMatchObject({ activityId: 'sub', activityType: 'subProcess', parentActivityInstanceId: id });
    expect(sub.childActivityInstances).toEqual([
      expect.objectContaining({
        activityId: 'work',
        activityType: 'serviceTask',
        parentActivityInstanceId: sub.id,
        childTransitionInstances: [],
      }),
    ]);

    const startAfter = await rest('POST', `/process-instance/${id}/modification`, {
      instructions: [{ type: 'startAfterActivity', activityId: 'sub' }],
    });
    expect(startAfter.status).toBe(400);
    expect(startAfter.body.message).toContain('startAfterActivity is not supported');
    const unknown = await rest('POST', `/process-instance/${id}/modification`, {
      instructions: [{ type: 'startBeforeActivity', activityId: 'ghost' }],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toContain('ghost');

    const elsewhere = await rest('POST', `/process-instance/${id}/modification`, {
      instructions: [{ type: 'cancel', activityInstanceId: 'sub:00000000-0000-4000-8000-000000000000' }],
    });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.message).toContain('is not open in process instance');

    const repaired = await rest('POST', `/process-instance/${id}/modification`, {
      instructions: [
        { type: 'startBeforeActivity', activityId: 'after' },
        { type: 'cancel', activityInstanceId: sub.id },
      ],
      annotation: 'skip the subprocess',
    });
    expect(repaired.status, JSON.stringify(repaired.body)).toBe(204);
    const after = await rest('GET', `/process-instance/${id}/activity-instances`);
    expect(after.body.childActivityInstances.map((a: { activityId: string }) => a.activityId)).toEqual(['after']);
    expect((await complete(t.api, await fetchOne(t.api, 'w', `${key}-after`), 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });
});

describe('incident annotations', () => {
  it('given an open incident, when it is annotated and the annotation cleared, then both APIs show it', async () => {
    await deploy(t.api, sequence('cm-inc', ['a']));
    const id = await startByKey(t.url, 'cm-inc');
    const locked = await fetchOne(t.api, 'w', 'cm-inc-a');
    expect(
      (await rest('POST', `/external-task/${locked.id}/failure`, { workerId: 'w', errorMessage: 'down', retries: 0 })).status,
    ).toBe(204);
    await waitForStatus(t.api, id, 'incident');
    const [incident] = (await rest('GET', `/incident?processInstanceId=${id}`)).body;
    expect(incident.annotation).toBeNull();

    expect((await rest('PUT', `/incident/${incident.id}/annotation`, { annotation: 'vendor outage' })).status).toBe(204);
    expect((await rest('GET', `/incident/${incident.id}`)).body.annotation).toBe('vendor outage');
    expect((await instanceOf(t.api, id)).incidents[0].annotation).toBe('vendor outage');

    expect((await rest('DELETE', `/incident/${incident.id}/annotation`)).status).toBe(204);
    expect((await rest('GET', `/incident/${incident.id}`)).body.annotation).toBeNull();
    expect((await rest('PUT', '/incident/00000000-0000-4000-8000-000000000000/annotation', { annotation: 'x' })).status).toBe(
      404,
    );
  });
});

describe('deployments', () => {
  it('given two native deploys of a key, then each is a deployment named after the key with its BPMN as its one resource', async () => {
    await deploy(t.api, sequence('cm-dep', ['a']));
    await deploy(t.api, sequence('cm-dep', ['a', 'b']));
    const defs = await rest('GET', '/process-definition?key=cm-dep&sortBy=version&sortOrder=asc');
    const [v1, v2] = defs.body.map((d: { deploymentId: string }) => d.deploymentId);
    expect(defs.body.map((d: { resource: string }) => d.resource)).toEqual(['cm-dep.bpmn', 'cm-dep.bpmn']);
    const list = await rest('GET', '/deployment?name=cm-dep&sortBy=deploymentTime&sortOrder=asc');
    expect(list.status).toBe(200);
    expect(list.body.map((d: { id: string }) => d.id)).toEqual([v1, v2]);
    expect(list.body[0]).toMatchObject({ name: 'cm-dep', source: null, tenantId: null });
    expect((await rest('GET', '/deployment/count?nameLike=cm-de%25')).body).toEqual({ count: 2 });
    expect((await rest('GET', '/deployment/count?nameLike=cm-de%25&withoutSource=true')).body).toEqual({ count: 2 });
    expect((await rest('GET', `/deployment/${v2}`)).body).toMatchObject({ id: v2, name: 'cm-dep' });
    const resources = await rest('GET', `/deployment/${v2}/resources`);
    expect(resources.body).toEqual([{ id: expect.any(String), name: 'cm-dep.bpmn', deploymentId: v2 }]);
    const resourceId = resources.body[0].id;
    expect((await rest('GET', `/deployment/${v2}/resources/${resourceId}`)).body).toEqual(resources.body[0]);
    const data = await rest('GET', `/deployment/${v2}/resources/${resourceId}/data`);
    expect(data.status).toBe(200);
    expect(String(data.body)).toContain('cm-dep-b');
    expect((await rest('GET', `/deployment/${v1}/resources/${resourceId}`)).status).toBe(404);
    expect((await rest('GET', '/deployment/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await rest('GET', '/deployment?withSource=true')).status).toBe(400);
  });
});
