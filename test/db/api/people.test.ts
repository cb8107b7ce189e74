// People with tokens of their own: a person acts only as themselves with the groups the server
// gives them, claims only what they are a candidate for (an admin claims anything), and a
// tasklist connected to /tasks hears each task created, changing hands and ending.
import { io, type Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseGroups } from '../../../runtime/security/people.ts';
import { parseTokens } from '../../../runtime/security/tokens.ts';
import { inlineDefinitions, inlineFlow as flow } from '../../support/bpmn.ts';
import { deploy, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { apiClient, startTestServer, waitFor, type ApiClient, type TestServer } from '../../support/server.ts';

const SECRETS = {
  admin: 'admin-secret-0123456789',
  alice: 'alice-secret-0123456789',
  carol: 'carol-secret-0123456789',
  worker: 'worker-secret-0123456789',
};

let t: TestServer;
let alice: ApiClient;
let carol: ApiClient;

beforeAll(async () => {
  t = await startTestServer({
    token: SECRETS.admin,
    auth: {
      tokens: parseTokens(
        `admin:ops:${SECRETS.admin},person:alice:${SECRETS.alice},person:carol:${SECRETS.carol},worker:billing:${SECRETS.worker}`,
      ),
      groups: parseGroups('sales=alice,support=alice|carol'),
    },
  });
  alice = apiClient(t.url, SECRETS.alice);
  carol = apiClient(t.url, SECRETS.carol);
});
afterAll(async () => {
  await t?.close();
});

/** start -> review (user task for the sales group) -> end */
function review(id: string): string {
  return inlineDefinitions(id, [
    '<bpmn:startEvent id="start" />',
    '<bpmn:userTask id="review" name="Review" camunda:candidateGroups="sales" />',
    '<bpmn:endEvent id="end" />',
    flow('f1', 'start', 'review'),
    flow('f2', 'review', 'end'),
  ]);
}

async function taskOf(instanceId: string): Promise<any> {
  return waitFor(async () => (await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items[0], 10_000, 'a user task');
}

describe('people', () => {
  it('given a person token, then /api/me names the person with the groups BATON_GROUPS gives them', async () => {
    expect((await alice.get('/api/me')).body).toEqual({
      name: 'alice',
      role: 'person',
      groups: ['sales', 'support'],
      tokensRequired: true,
    });
    expect((await t.api.get('/api/me')).body).toMatchObject({ name: 'ops', role: 'admin', groups: [] });
    expect((await apiClient(t.url).get('/api/me')).status).toBe(401);
  });

  it('given a person, then they see the tasks of their groups, claim and complete as themselves, and may not act for anyone else', async () => {
    await deploy(t.api, review('people_self'));
    const instanceId = await start(t.api, 'people_self');
    const task = await taskOf(instanceId);

    const forAlice = await alice.get(`/api/user-tasks?candidateUser=alice&instanceId=${instanceId}`);
    expect(forAlice.body.items.map((x: { id: string }) => x.id)).toEqual([task.id]);
    const forCarol = await carol.get(`/api/user-tasks?candidateUser=carol&instanceId=${instanceId}`);
    expect(forCarol.body.items).toEqual([]);

    // carol is not in sales: not as herself, not claiming to be alice, not by naming the group
    expect((await carol.post(`/api/user-tasks/${task.id}/claim`, {})).status).toBe(403);
    const asAlice = await carol.post(`/api/user-tasks/${task.id}/claim`, { userId: 'alice' });
    expect(asAlice.status).toBe(403);
    expect(asAlice.body.message).toContain('acts as "carol"');
    expect((await carol.post(`/api/user-tasks/${task.id}/claim`, { groups: ['sales'] })).status).toBe(403);
    expect((await t.api.get(`/api/user-tasks/${task.id}`)).body.assignee).toBeNull();

    const claimed = await alice.post(`/api/user-tasks/${task.id}/claim`, {});
    expect(claimed.status).toBe(200);
    expect(claimed.body.assignee).toBe('alice');
    expect((await carol.post(`/api/user-tasks/${task.id}/complete`, {})).status).toBe(409);
    expect((await alice.post(`/api/user-tasks/${task.id}/complete`, { variables: { ok: true } })).status).toBe(200);
    await waitForStatus(t.api, instanceId, 'completed');
    const history = (await t.api.get(`/api/instances/${instanceId}/history`)).body.items as { kind: string; data: any }[];
    expect(history.find((e) => e.kind === 'userTask:claimed')?.data).toMatchObject({ userId: 'alice', by: 'alice' });
  });

  it('given an admin, then they may claim a task for someone who is not a candidate; a worker token may not touch user tasks', async () => {
    await deploy(t.api, review('people_admin'));
    const instanceId = await start(t.api, 'people_admin');
    const task = await taskOf(instanceId);
    const worker = apiClient(t.url, SECRETS.worker);
    expect((await worker.post(`/api/user-tasks/${task.id}/claim`, { userId: 'dave' })).status).toBe(403);
    const claimed = await t.api.post(`/api/user-tasks/${task.id}/claim`, { userId: 'dave' });
    expect(claimed.status).toBe(200);
    expect(claimed.body.assignee).toBe('dave');
    expect((await instanceOf(t.api, instanceId)).status).toBe('running');
  });

  it('given a tasklist on /tasks, then it hears a task created, claimed and ended; a worker token is refused', async () => {
    const heard: { id: string; instanceId: string; change: string }[] = [];
    const socket: Socket = io(`${t.url}/tasks`, { auth: { token: SECRETS.carol }, transports: ['websocket'] });
    socket.on('userTask', (c) => heard.push(c));
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('connect_error', reject);
    });
    try {
      await deploy(t.api, review('people_feed'));
      const instanceId = await start(t.api, 'people_feed');
      const task = await taskOf(instanceId);
      await alice.post(`/api/user-tasks/${task.id}/claim`, {});
      await alice.post(`/api/user-tasks/${task.id}/complete`, {});
      await waitFor(
        async () => heard.filter((c) => c.instanceId === instanceId).length >= 3 || undefined,
        10_000,
        'three changes',
      );
      expect(heard.filter((c) => c.instanceId === instanceId)).toEqual([
        { id: task.id, instanceId, change: 'created' },
        { id: task.id, instanceId, change: 'updated' },
        { id: task.id, instanceId, change: 'ended' },
      ]);
    } finally {
      socket.close();
    }

    const refused = io(`${t.url}/tasks`, { auth: { token: SECRETS.worker }, transports: ['websocket'], reconnection: false });
    const error = await new Promise<Error & { data?: { type: string } }>((resolve) => refused.once('connect_error', resolve));
    refused.close();
    expect(error.data?.type).toBe('Forbidden');
  });
});
