// The tasklist in headless Chromium, against a server with tokens: alice (a person token, group
// sales) signs in, a task for her group appears live when an instance starts, she claims it, the
// form refuses a wrong amount (form-js, in the browser) and then a reference the server's stricter
// check refuses (shown at the same field), and once completed the instance has moved on. Without
// tokens, the person types a name and groups, and the sample's camunda:formData form is drawn.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseGroups } from '../../runtime/security/people.ts';
import { parseTokens } from '../../runtime/security/tokens.ts';
import { waitFor } from '../support/server.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

const ADMIN = 'tasklist-admin-0123456789';
const ALICE = 'tasklist-alice-0123456789';

let h: BrowserHarness;
const dialog = () => h.page.locator('dialog.token-dialog');
/** form-js draws each field in a .fjs-form-field, its errors under it; a required field's label ends in "*" */
const field = (label: string) => h.page.locator('.fjs-form-field', { has: h.page.getByLabel(label) });

describe('tasklist with a person token', () => {
  beforeAll(async () => {
    h = await openDesigner({
      auth: {
        tokens: parseTokens(`admin:ops:${ADMIN},person:alice:${ALICE}`),
        groups: parseGroups('sales=alice'),
        failures: { burst: 1_000_000, perMinute: 1_000_000 },
      },
      token: ADMIN,
    });
    const xml = await readFile('test/e2e/fixtures/order-approval-form.bpmn', 'utf8');
    expect((await h.t.api.post('/api/definitions', { xml })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  let instanceId = '';
  let taskId = '';

  it('given no token, opening Tasks asks for one and then shows who is signed in, with a live list', async () => {
    await h.page.goto(`${h.t.url}/#/tasks?tab=groups`);
    await dialog().waitFor({ state: 'visible' });
    await dialog().locator('input[name="token"]').fill(ALICE);
    await dialog().getByRole('button', { name: 'Save' }).click();
    await dialog().waitFor({ state: 'hidden' });
    await h.page.locator('.sign-in .person-name', { hasText: 'alice' }).waitFor();
    await expect(h.page.locator('.sign-in .person-groups').textContent()).resolves.toBe('sales');
    // A person has their own tabs only.
    await expect(h.page.getByRole('tab').allTextContents()).resolves.toEqual(['Mine', 'My groups']);
    await h.page.locator('.task-list .live-state[data-state="live"]').waitFor();
    await h.page.locator('.task-list .empty', { hasText: 'No open tasks' }).waitFor();
    await h.screenshot('tasklist-01-signed-in');
  });

  it('given the list open, a task for her group appears when an instance starts, without a reload', async () => {
    const started = await h.t.api.post('/api/instances', {
      definitionKey: 'order-approval-form',
      businessKey: 'order-7',
      variables: { orderRef: 'XYZ-9' },
    });
    expect(started.status).toBe(201);
    instanceId = started.body.id;
    const row = h.page.locator('table.user-tasks tbody tr', { hasText: 'order-7' });
    // Sooner than the list's own read while the stream is down (TASKS_FALLBACK_POLL_MS, 5 s): the stream brought it.
    await row.waitFor({ timeout: 4000 });
    await expect(row.locator('td').allTextContents()).resolves.toEqual(
      expect.arrayContaining(['Approve order', 'order-approval-form · order-7', 'nobody', '70']),
    );
    taskId = (await row.getAttribute('data-task-id')) ?? '';
    expect(taskId).not.toBe('');
    await h.screenshot('tasklist-02-task-appeared');
  });

  it('given the task opened, its element is marked on the diagram, its form starts from the variables, and only a claim lets her complete it', async () => {
    await h.page.getByRole('link', { name: 'Approve order' }).click();
    await h.page.waitForURL(new RegExp(`#/tasks/${taskId}$`));
    await h.page.locator('.djs-element.baton-task-current[data-element-id="approve"]').waitFor();
    await h.page.getByLabel('Amount').waitFor();
    await expect(h.page.getByLabel('Order reference').inputValue()).resolves.toBe('XYZ-9');
    await expect(h.page.getByLabel('Amount').inputValue()).resolves.toBe('');
    await expect(h.page.getByRole('button', { name: 'Complete' }).isDisabled()).resolves.toBe(true);
    await h.page.getByRole('button', { name: 'Claim' }).click();
    await h.page.locator('.task-view .meta .assignee', { hasText: 'alice' }).waitFor();
    await expect(h.page.getByRole('button', { name: 'Complete' }).isEnabled()).resolves.toBe(true);
    expect((await h.t.api.get(`/api/user-tasks/${taskId}`)).body.assignee).toBe('alice');
  });

  it('given an amount over the maximum, the form says so at the field and nothing is sent', async () => {
    const completions: string[] = [];
    h.page.on('request', (r) => {
      if (r.url().endsWith(`/api/user-tasks/${taskId}/complete`)) completions.push(r.url());
    });
    await h.page.getByLabel('Order reference').fill('ABC-12');
    await h.page.getByLabel('Amount').fill('5000');
    await h.page.getByRole('button', { name: 'Complete' }).click();
    await field('Amount').locator('.fjs-form-field-error', { hasText: 'maximum value of 1000' }).waitFor();
    expect(completions).toEqual([]);
    await h.screenshot('tasklist-03-amount-too-high');
  });

  it('given a value the server refuses after the form passed it, its message shows at that field and the task stays open', async () => {
    await h.page.getByLabel('Amount').fill('250');
    await h.page.getByLabel('Order reference').fill('ABC-12');
    // The server is the authority: the completion reaches it with a reference out of pattern.
    const completeUrl = `**/api/user-tasks/${taskId}/complete`;
    await h.page.route(completeUrl, (route) => {
      const body = JSON.parse(route.request().postData() ?? '{}');
      void route.continue({ postData: JSON.stringify({ ...body, variables: { ...body.variables, orderRef: 'abc-12' } }) });
    });
    await h.page.getByRole('button', { name: 'Complete' }).click();
    await field('Order reference').locator('.fjs-form-field-error', { hasText: 'must match' }).waitFor();
    await h.page.unroute(completeUrl);
    expect((await h.t.api.get(`/api/user-tasks/${taskId}`)).status).toBe(200);
    await h.screenshot('tasklist-04-server-refused');
  });

  it('given the form fixed, completing moves the instance on, and the task leaves her list', async () => {
    await h.page.getByLabel('Order reference').fill('ABC-12');
    // Leaving the field checks it again and takes the server's message away (the form gets shorter).
    await h.page.getByLabel('Order reference').blur();
    await field('Order reference').locator('.fjs-form-field-error').waitFor({ state: 'detached' });
    await h.page.getByLabel('Approved').check();
    await h.page.getByRole('button', { name: 'Complete' }).click();
    await h.page.locator('.task-outcome', { hasText: 'Completed' }).waitFor();
    await h.screenshot('tasklist-05-completed');
    await h.page.locator('.task-outcome a.instance-link').click();
    await h.page.locator(`.instance-view [data-status="completed"]`).waitFor();
    const instance = (await h.t.api.get(`/api/instances/${instanceId}`)).body;
    expect(instance.status).toBe('completed');
    expect(instance.variables).toMatchObject({ orderRef: 'ABC-12', amount: 250, approved: true });
    await h.screenshot('tasklist-06-instance-completed');
    await h.page.getByRole('link', { name: 'Tasks' }).click();
    await h.page.locator('.task-list .empty', { hasText: 'You hold no tasks' }).waitFor();
    // The browser logs the answers the test asked for (401 before signing in, the server's 400); nothing else.
    expect(h.consoleErrors.filter((e) => !/status of 40[01]/.test(e))).toEqual([]);
  });

  it('given Sign out, the token is gone and nobody is signed in until Sign in asks for one again', async () => {
    await h.page.getByRole('button', { name: 'Sign out' }).click();
    await h.page.locator('.sign-in[data-signed-in="false"]').waitFor();
    await h.page.locator('.task-list .empty', { hasText: 'Sign in to see your tasks' }).waitFor();
    expect(await h.page.evaluate(() => localStorage.getItem('baton.token'))).toBeNull();
    expect(await dialog().isVisible()).toBe(false);
    await h.page.getByRole('button', { name: 'Sign in' }).click();
    await dialog().locator('input[name="token"]').fill(ALICE);
    await dialog().getByRole('button', { name: 'Save' }).click();
    await h.page.locator('.sign-in .person-name', { hasText: 'alice' }).waitFor();
    await h.page.locator('.task-list .live-state[data-state="live"]').waitFor();
  });
});

describe('tasklist on a server without tokens', () => {
  beforeAll(async () => {
    h = await openDesigner();
    const xml = await readFile('samples/order-approval.bpmn', 'utf8');
    expect((await h.t.api.post('/api/definitions', { xml })).status).toBe(201);
    // Answers that end a task reach the page after the live event saying it ended, so the view must not read the ended task meanwhile.
    await h.page.route(/\/api\/user-tasks\/[^/]+\/(complete|bpmn-error|bpmn-escalation)$/, async (route) => {
      const response = await route.fetch();
      await new Promise((resolve) => setTimeout(resolve, 400));
      await route.fulfill({ response });
    });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  it('given a name and groups typed in, the sample task shows under My groups, and its formData form completes it', async () => {
    const started = await h.t.api.post('/api/instances', { definitionKey: 'order-approval', businessKey: 'order-42' });
    await h.page.goto(`${h.t.url}/#/tasks`);
    const form = h.page.locator('form.person-form');
    await form.getByLabel('Your name').fill('bob');
    await form.getByLabel('Groups').fill('approvers, buyers');
    await form.getByRole('button', { name: 'Use' }).click();
    await h.page.locator('.sign-in', { hasText: 'Acting as bob' }).waitFor();
    await expect(h.page.getByRole('tab').allTextContents()).resolves.toEqual(['Mine', 'My groups', 'All']);
    await h.page.getByRole('tab', { name: 'My groups' }).click();
    await h.page
      .locator('table.user-tasks tbody tr', { hasText: 'order-42' })
      .getByRole('link', { name: 'Approve order' })
      .click();
    await h.page.getByRole('button', { name: 'Claim' }).click();
    await h.page.locator('.task-view .meta .assignee', { hasText: 'bob' }).waitFor();
    await h.page.getByLabel('Approved amount').fill('20000');
    await h.page.getByRole('button', { name: 'Complete' }).click();
    await field('Approved amount').locator('.fjs-form-field-error', { hasText: 'maximum value of 10000' }).waitFor();
    await h.page.getByLabel('Approved amount').fill('900');
    await h.page.getByLabel('Approved amount').blur();
    await field('Approved amount').locator('.fjs-form-field-error').waitFor({ state: 'detached' });
    await h.page.getByLabel('Approve the order').check();
    await h.screenshot('tasklist-07-form-data');
    await h.page.getByRole('button', { name: 'Complete' }).click();
    await h.page.locator('.task-outcome', { hasText: 'Completed' }).waitFor();
    const instance = (await h.t.api.get(`/api/instances/${started.body.id}`)).body;
    expect(instance).toMatchObject({ status: 'completed', variables: { approved: true, amount: 900, channel: 'mail' } });
    expect(instance.steps.find((st: { stepId: string }) => st.stepId === 'End_Approved')?.status).toBe('completed');
    expect(h.consoleErrors).toEqual([]);
  });

  it("given Camunda's invoice example, the holder raises its escalation or reports its error from buttons named after the boundaries, and the process takes that path", async () => {
    const xml = await readFile('test/fixtures/corpus/camunda-bpm-examples/invoice-payment.bpmn', 'utf8');
    expect((await h.t.api.post('/api/definitions', { xml })).status).toBe(201);
    for (const [businessKey, button, next] of [
      ['invoice-1', 'Suspicous sender', 'Inform Supervisor'],
      ['invoice-2', 'Unspecified Amount', 'Archive Invoice'],
    ] as const) {
      const started = await h.t.api.post('/api/instances', { definitionKey: 'embeddedFormsBpmnEvents', businessKey });
      const taskId = await waitFor(
        async () => (await h.t.api.get(`/api/user-tasks?instanceId=${started.body.id}`)).body.items[0]?.id as string | undefined,
      );
      await h.page.goto(`${h.t.url}/#/tasks/${taskId}`);
      const raise = h.page.getByRole('button', { name: button });
      await raise.waitFor();
      await expect(raise.isDisabled()).resolves.toBe(true);
      await h.page.getByRole('button', { name: 'Claim' }).click();
      await h.page.locator('.task-view .meta .assignee', { hasText: 'bob' }).waitFor();
      await raise.click();
      await h.page.locator('.task-outcome', { hasText: 'The task has ended and the process takes that path' }).waitFor();
      const open = await waitFor(async () => {
        const items = (await h.t.api.get(`/api/user-tasks?instanceId=${started.body.id}`)).body.items as { name?: string }[];
        return items.length > 0 ? items : undefined;
      });
      expect(open.map((x) => x.name)).toEqual([next]);
      const steps = (await h.t.api.get(`/api/instances/${started.body.id}`)).body.steps as { stepId: string; status: string }[];
      expect(steps.find((st) => st.stepId === 'Task_16y91ka')?.status).toBe('canceled');
    }
    await h.screenshot('tasklist-08-raised');
    expect(h.consoleErrors).toEqual([]);
  });

  it('given a catch-all error boundary, the holder types the code to report, an empty code is refused on the page, and the process records the code', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D_any" targetNamespace="https://baton.dev/test">
  <bpmn:process id="tl_any_error" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="review" name="Review the claim" />
    <bpmn:boundaryEvent id="problem" name="Report a problem" attachedToRef="review"><bpmn:errorEventDefinition camunda:errorCodeVariable="reason" /></bpmn:boundaryEvent>
    <bpmn:userTask id="handle" name="Handle the problem" />
    <bpmn:endEvent id="done" />
    <bpmn:endEvent id="handled" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="review" />
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="done" />
    <bpmn:sequenceFlow id="f3" sourceRef="problem" targetRef="handle" />
    <bpmn:sequenceFlow id="f4" sourceRef="handle" targetRef="handled" />
  </bpmn:process>
</bpmn:definitions>`;
    expect((await h.t.api.post('/api/definitions', { xml })).status).toBe(201);
    const started = await h.t.api.post('/api/instances', { definitionKey: 'tl_any_error' });
    const taskId = await waitFor(
      async () => (await h.t.api.get(`/api/user-tasks?instanceId=${started.body.id}`)).body.items[0]?.id as string | undefined,
    );
    await h.page.goto(`${h.t.url}/#/tasks/${taskId}`);
    await h.page.getByRole('button', { name: 'Claim' }).click();
    await h.page.locator('.task-view .meta .assignee', { hasText: 'bob' }).waitFor();
    const report = h.page.getByRole('button', { name: 'Report a problem' });
    await report.click();
    await h.page.locator('.task-view', { hasText: 'Type the error code to raise first.' }).waitFor();
    expect((await h.t.api.get(`/api/user-tasks/${taskId}`)).status).toBe(200);
    await h.page.getByLabel('Code of the error to raise').fill('MISSING_RECEIPT');
    await report.click();
    await h.page.locator('.task-outcome', { hasText: 'The task has ended and the process takes that path' }).waitFor();
    const instance = await waitFor(async () => {
      const view = (await h.t.api.get(`/api/instances/${started.body.id}`)).body;
      return view.steps.some((st: { stepId: string; status: string }) => st.stepId === 'handle' && st.status === 'active')
        ? view
        : undefined;
    });
    expect(instance.variables).toMatchObject({ reason: 'MISSING_RECEIPT' });
    expect(h.consoleErrors).toEqual([]);
  });
});
