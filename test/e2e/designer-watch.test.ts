// Watching instances in headless Chromium: live task state with worker and lock expiry,
// incidents with Retry, Cancel, and the instance list's filters and paging.
import { copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
  const order = await readFile(path.resolve('samples/order.bpmn'), 'utf8');
  const fixture = await readFile(path.resolve('test/e2e/fixtures/no-topic.bpmn'), 'utf8');
  // The fixture with a topic and no retries: one failure makes an incident.
  const fragile = fixture
    .replace('id="e2e-order"', 'id="fragile"')
    .replace('bpmnElement="e2e-order"', 'bpmnElement="fragile"')
    .replace(
      '<bpmn:serviceTask id="work" name="Charge card">',
      '<bpmn:serviceTask id="work" name="Call flaky API" camunda:type="external" camunda:topic="flaky" baton:retries="0">',
    )
    .replace('xmlns:camunda=', 'xmlns:baton="https://baton.dev/schema/bpmn/1.0" xmlns:camunda=');
  for (const xml of [order, fragile]) expect((await h.t.api.post('/api/definitions', { xml })).status).toBe(201);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function lockOne(topic: string, workerId: string): Promise<{ id: string; lockToken: string; instanceId: string }> {
  const [task] = (
    await h.t.api.post('/api/external-tasks/fetch-and-lock', {
      workerId,
      maxTasks: 1,
      topics: [{ name: topic, lockDurationMs: 600_000 }],
    })
  ).body;
  expect(task, `a ${topic} task`).toBeDefined();
  return task;
}

const shape = (id: string, marker: string) => h.page.locator(`g.djs-element${marker}[data-element-id="${id}"]`);

describe('instance view', () => {
  it('given one branch done and one locked by a worker, then the diagram, badge and task table show it', async () => {
    const started = await h.t.api.post('/api/instances', {
      definitionKey: 'order',
      businessKey: 'order-7',
      variables: { total: 164 },
    });
    const charge = await lockOne('charge-card', 'billing-1');
    await h.t.api.post(`/api/external-tasks/${charge.id}/complete`, {
      workerId: 'billing-1',
      lockToken: charge.lockToken,
      variables: { charged: 164 },
    });
    await lockOne('reserve-stock', 'stock-1');

    await h.page.goto(`${h.t.url}/#/instances/${started.body.id}`);
    await shape('Task_ChargeCard', '.baton-step-completed').waitFor();
    await shape('Task_ReserveStock', '.baton-step-active').waitFor();
    await h.page.locator('.baton-step-badge', { hasText: 'locked by stock-1' }).waitFor();
    const row = h.page.locator('.tasks tr[data-step-id="Task_ReserveStock"]');
    await expect(row.textContent()).resolves.toMatch(/reserve-stock.*locked.*stock-1/);
    expect(await row.locator('td').nth(4).textContent()).not.toBe('—'); // lock expiry
    const file = await h.screenshot('readme-running-instance');
    // `BATON_README_SCREENSHOT=1 npx vitest run test/e2e/designer-watch.test.ts` refreshes the README's picture.
    if (process.env.BATON_README_SCREENSHOT) await copyFile(file, path.resolve('docs/designer.png'));
  });

  it('given a task failed with no retries left, then the incident shows; Retry puts the task back to ready', async () => {
    const started = await h.t.api.post('/api/instances', { definitionKey: 'fragile', businessKey: 'flaky-1' });
    const task = await lockOne('flaky', 'w-flaky');
    await h.t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w-flaky',
      lockToken: task.lockToken,
      errorMessage: 'upstream said 503',
    });
    await h.page.goto(`${h.t.url}/#/instances/${started.body.id}`);
    await h.page.locator('.status[data-status="incident"]').waitFor();
    await shape('work', '.baton-step-incident').waitFor();
    await h.page.locator('.incidents li', { hasText: 'upstream said 503' }).waitFor();
    await h.screenshot('07-incident');
    await h.page.locator('.incidents').getByRole('button', { name: 'Retry' }).click();
    await h.page.locator('.status[data-status="running"]').waitFor();
    await h.page.locator('.tasks tr[data-step-id="work"] td', { hasText: 'ready' }).waitFor();
    expect((await h.t.api.get(`/api/instances/${started.body.id}`)).body.incidents).toEqual([]);
  });

  it('when Cancel is pressed, then the instance is canceled and the button goes', async () => {
    await h.page.getByRole('button', { name: 'Cancel instance' }).click();
    await h.page.locator('.status[data-status="canceled"]').waitFor();
    await h.page.getByRole('button', { name: 'Cancel instance' }).waitFor({ state: 'detached' });
  });
});

describe('instances list', () => {
  it('filters by definition, status and business key, and pages by cursor', async () => {
    for (let n = 0; n < 21; n++) await h.t.api.post('/api/instances', { definitionKey: 'fragile', businessKey: `page-${n}` });
    await h.page.goto(`${h.t.url}/#/instances?definitionKey=fragile`);
    await expect.poll(() => h.page.locator('.instance-list tbody tr').count()).toBe(20);
    await h.page.getByRole('button', { name: 'Next page' }).click();
    await h.page.getByText('Page 2').waitFor();
    // 21 running + the canceled one from above
    await expect.poll(() => h.page.locator('.instance-list tbody tr').count()).toBe(2);
    await h.page.getByRole('button', { name: 'First page' }).click();
    await h.page.locator('select[name="status"]').selectOption('canceled');
    await h.page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => h.page.locator('.instance-list tbody tr').count()).toBe(1);
    await h.page.locator('select[name="status"]').selectOption('');
    await h.page.locator('input[name="businessKey"]').fill('page-3');
    await h.page.getByRole('button', { name: 'Filter' }).click();
    await expect
      .poll(() => h.page.locator('.instance-list tbody tr').allTextContents())
      .toEqual([expect.stringContaining('page-3')]);
    await h.page.locator('input[name="businessKey"]').fill('');
    await h.page.locator('select[name="definitionKey"]').selectOption('order');
    await h.page.getByRole('button', { name: 'Filter' }).click();
    await expect
      .poll(() => h.page.locator('.instance-list tbody tr').allTextContents())
      .toEqual([expect.stringContaining('order-7')]);
    await h.page.locator('input[name="businessKey"]').fill('nobody');
    await h.page.getByRole('button', { name: 'Filter' }).click();
    await h.page.getByText('No instances match').waitFor();
    expect(h.consoleErrors).toEqual([]);
  });
});
