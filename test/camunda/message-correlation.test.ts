// POST /engine-rest/message correlates as Camunda 7 does: by the waiting instances' process
// variables (correlationKeys, typed, ANDed), business key and instance id; exactly one
// execution unless `all`; results as Execution or ProcessDefinition.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../support/bpmn.ts';
import { deploy, instanceOf, start } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

let t: TestServer;

/** start -> catch `message` -> ship (task) -> end: a correlated instance moves on to a task and stays running. */
function catchBpmn(key: string, message: string, correlationKey?: string): string {
  return buildBpmn(
    key,
    [
      { id: 's', type: 'startEvent' },
      { id: 'wait', type: 'catchEvent', message, ...(correlationKey ? { correlationKey } : {}) },
      { id: 'ship', type: 'serviceTask', topic: `${key}-ship` },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'wait' },
      { from: 'wait', to: 'ship' },
      { from: 'ship', to: 'e' },
    ],
  );
}

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, catchBpmn('mc_pay', 'mc-paid'));
  await deploy(t.api, catchBpmn('mc_keyed', 'mc-keyed', 'ref'));
  await deploy(
    t.api,
    buildBpmn(
      'mc_open',
      [
        { id: 'opened', type: 'eventStart', message: 'mc-open' },
        { id: 'work', type: 'serviceTask', topic: 'mc-open-work' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 'opened', to: 'work' },
        { from: 'work', to: 'e' },
      ],
    ),
  );
});
afterAll(async () => {
  await t?.close();
});

type Typed = { value: unknown; type?: string };

/** Starts mc_pay (or `key`) through the Camunda API with typed variables and waits until its catch waits. */
async function waitingInstance(variables: Record<string, Typed>, key = 'mc_pay', businessKey?: string): Promise<string> {
  const id = await startByKey(t.url, key, { variables, ...(businessKey ? { businessKey } : {}) });
  await waitFor(
    async () => ((await t.db.pool.query('select 1 from subscriptions where instance_id = $1', [id])).rowCount ? true : undefined),
    10_000,
    `${id} to wait`,
  );
  return id;
}

/** Whether each instance still waits at its catch, and the steps it activated. */
async function stateOf(ids: string[]) {
  const { rows } = await t.db.pool.query<{ id: string; waiting: boolean; tasks: number; variables: Record<string, unknown> }>(
    `select i.id, exists(select 1 from subscriptions s where s.instance_id = i.id) as waiting,
            (select count(*)::int from external_tasks x where x.instance_id = i.id) as tasks, i.variables
       from instances i where i.id = any($1::uuid[])`,
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.id, { waiting: r.waiting, tasks: r.tasks, variables: r.variables }]));
}

const messageCount = async () => (await t.db.pool.query('select count(*)::int as n from messages')).rows[0].n as number;

const correlate = (body: Record<string, unknown>) => engineRest(t.url, 'POST', '/message', body);

describe('correlationKeys: process variables of the waiting instance', () => {
  it('given two instances with different orderIds, then the message reaches only the one whose orderId matches', async () => {
    const a = await waitingInstance({ orderId: { value: 'A-100', type: 'String' } });
    const b = await waitingInstance({ orderId: { value: 'B-200', type: 'String' } });
    const res = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'B-200', type: 'String' } },
      processVariables: { paid: { value: true, type: 'Boolean' } },
    });
    expect(res.status).toBe(204);
    const state = await stateOf([a, b]);
    expect(state[a]).toEqual({ waiting: true, tasks: 0, variables: { orderId: 'A-100' } });
    expect(state[b]).toEqual({ waiting: false, tasks: 1, variables: { orderId: 'B-200', paid: true } });
  });

  it('given several keys, then all of them must hold (AND); none holding all is 400 and changes nothing', async () => {
    const eu = await waitingInstance({ orderId: { value: 'X-1' }, region: { value: 'eu' } });
    const us = await waitingInstance({ orderId: { value: 'X-1' }, region: { value: 'us' } });
    const before = await messageCount();
    const none = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'X-1' }, region: { value: 'asia' } },
    });
    expect(none.status).toBe(400);
    expect(none.body).toEqual({
      type: 'RestException',
      message: "Cannot correlate message 'mc-paid': No process definition or execution matches the parameters",
    });
    expect(await messageCount()).toBe(before);
    const res = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'X-1' }, region: { value: 'us' } },
      resultEnabled: true,
    });
    expect(res.status).toBe(200);
    expect(res.body.map((r: { execution: { id: string } }) => r.execution.id)).toEqual([us]);
    const state = await stateOf([eu, us]);
    expect([state[eu]?.waiting, state[us]?.waiting]).toEqual([true, false]);
  });

  it('given typed values, then the value and its type must match as Camunda compares them: a String "42" or an Integer 42 is not a Long 42', async () => {
    const long = await waitingInstance({ code: { value: 42, type: 'Long' }, lane: { value: 'typed' } });
    for (const key of [
      { value: '42', type: 'String' },
      { value: 42, type: 'Integer' },
      { value: 42 },
      { value: 42.5, type: 'Double' },
    ]) {
      const res = await correlate({ messageName: 'mc-paid', correlationKeys: { code: key, lane: { value: 'typed' } } });
      expect(res.status, JSON.stringify(key)).toBe(400);
    }
    expect((await stateOf([long]))[long]?.waiting).toBe(true);
    const res = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { code: { value: 42, type: 'Long' }, lane: { value: 'typed' } },
    });
    expect(res.status).toBe(204);
    expect((await stateOf([long]))[long]?.waiting).toBe(false);
  });

  it('given an instance started natively, then its plain JSON values have the types Baton infers for them (7 is an Integer, "7" a String)', async () => {
    const id = await start(t.api, 'mc_pay', { variables: { seat: 7, lane: 'native' } });
    await waitFor(
      async () =>
        (await t.db.pool.query('select 1 from subscriptions where instance_id = $1', [id])).rowCount ? true : undefined,
      10_000,
      `${id} to wait`,
    );
    for (const seat of [
      { value: '7', type: 'String' },
      { value: 7, type: 'Long' },
    ]) {
      const res = await correlate({ messageName: 'mc-paid', correlationKeys: { seat, lane: { value: 'native' } } });
      expect(res.status, JSON.stringify(seat)).toBe(400);
    }
    const res = await correlate({ messageName: 'mc-paid', correlationKeys: { seat: { value: 7 }, lane: { value: 'native' } } });
    expect(res.status).toBe(204);
  });

  it('given a catch with its own baton:correlationKey, then correlationKeys still match process variables, not the catch key', async () => {
    const id = await waitingInstance({ ref: { value: 'R-1' }, orderId: { value: 'K-1' } }, 'mc_keyed');
    // The catch waits under the key "R-1" (its expression `ref`); a key named otherwise holding that value is no process variable.
    const byCatchKey = await correlate({ messageName: 'mc-keyed', correlationKeys: { anything: { value: 'R-1' } } });
    expect(byCatchKey.status).toBe(400);
    const res = await correlate({ messageName: 'mc-keyed', correlationKeys: { orderId: { value: 'K-1' } } });
    expect(res.status).toBe(204);
    expect((await stateOf([id]))[id]?.waiting).toBe(false);
  });

  it('given processInstanceId or businessKey, then they narrow the match further', async () => {
    const first = await waitingInstance({ orderId: { value: 'N-1' } }, 'mc_pay', 'bk-n-1');
    const second = await waitingInstance({ orderId: { value: 'N-1' } }, 'mc_pay', 'bk-n-2');
    const third = await waitingInstance({ orderId: { value: 'N-1' } }, 'mc_pay', 'bk-n-3');
    const byId = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'N-1' } },
      processInstanceId: second,
      resultEnabled: true,
    });
    expect(byId.body.map((r: { execution: { id: string } }) => r.execution.id)).toEqual([second]);
    const byKey = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'N-1' } },
      businessKey: 'bk-n-3',
      resultEnabled: true,
    });
    expect(byKey.body.map((r: { execution: { id: string } }) => r.execution.id)).toEqual([third]);
    const state = await stateOf([first, second, third]);
    expect([state[first]?.waiting, state[second]?.waiting, state[third]?.waiting]).toEqual([true, false, false]);
    // An instance that no longer waits is no match: 400, and a message addressed to it starts nothing either.
    const gone = await correlate({ messageName: 'mc-open', processInstanceId: second });
    expect(gone.status).toBe(400);
  });
});

describe('one execution, or all of them', () => {
  it('given two matching executions without all, then 400 RestException naming the count, and nothing changes', async () => {
    const ids = [
      await waitingInstance({ orderId: { value: 'D-1' } }, 'mc_pay'),
      await waitingInstance({ orderId: { value: 'D-1' } }, 'mc_pay'),
    ];
    const before = await messageCount();
    const res = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'D-1' } },
      processVariables: { paid: { value: true } },
    });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('RestException');
    expect(res.body.message).toMatch(
      /^Cannot correlate a message with name 'mc-paid' to a single execution\. 2 executions match the correlation keys: CorrelationSet \[.*orderId=D-1/,
    );
    expect(await messageCount()).toBe(before);
    expect(Object.values(await stateOf(ids))).toEqual([
      { waiting: true, tasks: 0, variables: { orderId: 'D-1' } },
      { waiting: true, tasks: 0, variables: { orderId: 'D-1' } },
    ]);
  });

  it('given two matching executions with all, then both get the message and both results are answered', async () => {
    const ids = [
      await waitingInstance({ orderId: { value: 'E-1' } }, 'mc_pay'),
      await waitingInstance({ orderId: { value: 'E-1' } }, 'mc_pay'),
    ].sort();
    const res = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'E-1' } },
      processVariables: { paid: { value: true } },
      all: true,
      resultEnabled: true,
    });
    expect(res.status).toBe(200);
    expect(res.body.map((r: { resultType: string; execution: { id: string } }) => [r.resultType, r.execution.id])).toEqual(
      ids.map((id) => ['Execution', id]),
    );
    expect(Object.values(await stateOf(ids))).toEqual([
      { waiting: false, tasks: 1, variables: { orderId: 'E-1', paid: true } },
      { waiting: false, tasks: 1, variables: { orderId: 'E-1', paid: true } },
    ]);
    const { rows } = await t.db.pool.query(
      `select instance_id, state from messages where name = 'mc-paid' and instance_id = any($1::uuid[]) order by instance_id`,
      [ids],
    );
    expect(rows).toEqual(ids.map((id) => ({ instance_id: id, state: 'matched' })));
  });

  it('given all and nothing matching, then 204 and nothing changes (Camunda answers an empty list)', async () => {
    const before = await messageCount();
    const res = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'nobody' } },
      all: true,
      resultEnabled: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(await messageCount()).toBe(before);
  });

  it('given the matching instance held by another transaction, then the correlation waits for it and reaches it once', async () => {
    const id = await waitingInstance({ orderId: { value: 'H-1' } }, 'mc_pay');
    const holder = await t.db.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from instances where id = $1 for no key update', [id]);
      const answer = correlate({ messageName: 'mc-paid', correlationKeys: { orderId: { value: 'H-1' } }, resultEnabled: true });
      await new Promise((r) => setTimeout(r, 150));
      expect((await stateOf([id]))[id]?.waiting).toBe(true);
      await holder.query('commit');
      const res = await answer;
      expect(res.status).toBe(200);
      expect(res.body.map((r: { execution: { id: string } }) => r.execution.id)).toEqual([id]);
    } finally {
      holder.release();
    }
    expect((await stateOf([id]))[id]).toMatchObject({ waiting: false, tasks: 1 });
  });

  it('given two correlations of one message racing for one waiting execution, then exactly one wins and the other is 400; the catch fires once (10 rounds)', async () => {
    for (let round = 0; round < 10; round++) {
      const id = await waitingInstance({ orderId: { value: `R-${round}` } }, 'mc_pay');
      const body = { messageName: 'mc-paid', correlationKeys: { orderId: { value: `R-${round}` } } };
      const answers = await Promise.all([correlate(body), correlate(body)]);
      expect(answers.map((a) => a.status).sort()).toEqual([204, 400]);
      expect(answers.find((a) => a.status === 400)?.body.message).toContain('No process definition or execution matches');
      expect((await stateOf([id]))[id]).toMatchObject({ waiting: false, tasks: 1 });
      const { rows } = await t.db.pool.query(
        `select (select count(*)::int from messages where instance_id = $1) as messages,
                (select count(*)::int from events where instance_id = $1 and kind = 'step:completed' and step_id = 'wait') as fired`,
        [id],
      );
      expect(rows[0]).toEqual({ messages: 1, fired: 1 });
    }
  });
});

describe('results', () => {
  it('given resultEnabled and variablesInResultEnabled on a catch, then an Execution result with the typed variables after the correlation', async () => {
    const id = await waitingInstance({
      orderId: { value: 'V-1' },
      since: { value: '2024-05-01T12:00:00.000+0200', type: 'Date' },
    });
    const res = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'V-1', type: 'String' } },
      processVariables: { amount: { value: 12, type: 'Long' } },
      resultEnabled: true,
      variablesInResultEnabled: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        resultType: 'Execution',
        execution: { id, processInstanceId: id, ended: false, tenantId: null },
        processInstance: null,
        variables: {
          orderId: { type: 'String', value: 'V-1', valueInfo: {} },
          since: { type: 'Date', value: '2024-05-01T10:00:00.000+0000', valueInfo: {} },
          amount: { type: 'Long', value: 12, valueInfo: {} },
        },
      },
    ]);
  });

  it('given a message start event and no waiting execution, then a ProcessDefinition result with the started instance (and its variables)', async () => {
    const res = await correlate({
      messageName: 'mc-open',
      businessKey: 'open-1',
      correlationKeys: { ignoredForStarts: { value: 1 } },
      processVariables: { total: { value: 5, type: 'Short' } },
      resultEnabled: true,
      variablesInResultEnabled: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
    const [result] = res.body;
    expect(result).toEqual({
      resultType: 'ProcessDefinition',
      execution: null,
      processInstance: {
        links: [],
        id: expect.any(String),
        definitionId: expect.any(String),
        businessKey: 'open-1',
        caseInstanceId: null,
        ended: false,
        suspended: false,
        tenantId: null,
      },
      variables: { total: { type: 'Short', value: 5, valueInfo: {} } },
    });
    expect(await instanceOf(t.api, result.processInstance.id)).toMatchObject({ definitionKey: 'mc_open', businessKey: 'open-1' });
    // The business key is taken: the same message answers that instance and starts no other.
    const again = await correlate({ messageName: 'mc-open', businessKey: 'open-1', resultEnabled: true });
    expect(again.body.map((r: { processInstance: { id: string } }) => r.processInstance.id)).toEqual([result.processInstance.id]);
    const { rows } = await t.db.pool.query(`select count(*)::int as n from instances where business_key = 'open-1'`);
    expect(rows[0].n).toBe(1);
  });
});

describe('fields Baton does not run are refused, never ignored', () => {
  it('given local correlation keys or local variables, then 400 InvalidRequestException naming the field; empty ones are accepted', async () => {
    const id = await waitingInstance({ orderId: { value: 'L-1' } });
    for (const field of ['localCorrelationKeys', 'processVariablesLocal', 'processVariablesToTriggeredScope']) {
      const res = await correlate({
        messageName: 'mc-paid',
        correlationKeys: { orderId: { value: 'L-1' } },
        [field]: { x: { value: 1 } },
      });
      expect(res.status, field).toBe(400);
      expect(res.body.type).toBe('InvalidRequestException');
      expect(res.body.message).toContain(`'${field}'`);
    }
    expect((await stateOf([id]))[id]?.waiting).toBe(true);
    const res = await correlate({
      messageName: 'mc-paid',
      correlationKeys: { orderId: { value: 'L-1' } },
      localCorrelationKeys: {},
      processVariablesLocal: null,
      withoutTenantId: true,
    });
    expect(res.status).toBe(204);
    expect((await stateOf([id]))[id]).toMatchObject({ waiting: false, tasks: 1 });
  });

  it('given bodies Camunda refuses or keys it cannot query, then 400 InvalidRequestException and nothing changes', async () => {
    const id = await waitingInstance({ orderId: { value: 'B-1' } });
    const before = await messageCount();
    for (const body of [
      { messageName: 'mc-paid', tenantId: 't', withoutTenantId: true },
      { messageName: 'mc-paid', variablesInResultEnabled: true },
      { messageName: 'mc-paid', correlationKeys: { orderId: { value: '{"a":1}', type: 'Json' } } },
      { messageName: 'mc-paid', correlationKeys: { orderId: { value: 'AAAA', type: 'Bytes' } } },
      { messageName: 'mc-paid', processVariables: { scratch: { value: 1, valueInfo: { transient: true } } } },
    ]) {
      const res = await correlate(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.type, JSON.stringify(body)).toBe('InvalidRequestException');
    }
    // No instance belongs to a tenant: a tenant id matches nothing.
    const tenant = await correlate({ messageName: 'mc-paid', correlationKeys: { orderId: { value: 'B-1' } }, tenantId: 'acme' });
    expect(tenant.status).toBe(400);
    expect(tenant.body.type).toBe('RestException');
    expect(await messageCount()).toBe(before);
    expect((await stateOf([id]))[id]?.waiting).toBe(true);
  });
});
