// The operator's day in headless Chromium: a worker fails a task for good because variable
// `amount` is negative; the operator finds the incident on the Incidents page, reads the
// worker's error, fixes the variable in the instance view, retries from the Incidents page,
// and the worker completes the task with the fixed variable.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus, type LockedTask } from '../support/flows.ts';
import { waitFor } from '../support/server.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
  await deploy(h.t.api, singleTaskBpmn('payout', 'pay', { retries: 0 }));
}, 120_000);
afterAll(async () => {
  await h?.close();
});

/** The test's worker: refuses a negative amount with no retries left, completes anything else. */
async function work(task: LockedTask): Promise<'failed' | 'completed'> {
  const amount = task.variables.amount as number;
  if (amount < 0) {
    const res = await h.t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'payout-worker',
      lockToken: task.lockToken,
      errorMessage: `amount must not be negative (got ${amount})`,
      errorDetails: `RangeError: amount must not be negative\n    at pay (payout-worker.js:12:11)`,
      retries: 0,
    });
    expect(res.status).toBe(204);
    return 'failed';
  }
  expect((await complete(h.t.api, task, 'payout-worker', { paid: amount })).status).toBe(204);
  return 'completed';
}

async function failedInstance(amount: number): Promise<string> {
  const id = await start(h.t.api, 'payout', { variables: { amount } });
  const task = await fetchOne(h.t.api, 'payout-worker', 'pay');
  expect(task.instanceId).toBe(id);
  expect(await work(task)).toBe('failed');
  await waitForStatus(h.t.api, id, 'incident');
  return id;
}

describe('designer: incidents and variables', () => {
  it('given a task failed for a negative amount, then the operator fixes the variable in the instance view, retries from the incidents page and the instance completes', async () => {
    const id = await failedInstance(-5);

    await h.page.goto(h.t.url);
    await h.page.getByRole('link', { name: 'Incidents' }).click();
    await h.page.getByRole('heading', { name: 'Incidents' }).waitFor();
    const row = h.page.locator(`table.incident-list tr[data-instance-id="${id}"]`);
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('amount must not be negative (got -5)');
    await expect(row.textContent()).resolves.toContain('task_failed');
    await h.screenshot('incidents-01-list');

    await row.click();
    const details = h.page.locator('.incident-details');
    await details.locator('.error-details', { hasText: 'at pay (payout-worker.js:12:11)' }).waitFor();
    await h.screenshot('incidents-02-details');

    await details.locator('a.instance-link').click();
    await h.page.waitForURL(new RegExp(`#/instances/${id}$`));
    const amountRow = h.page.locator('table.variables tr[data-variable="amount"]');
    await expect(amountRow.locator('.value').textContent()).resolves.toBe('-5');
    const revision = (await h.t.api.get(`/api/instances/${id}`)).body.revision as number;
    await amountRow.getByRole('button', { name: 'Edit' }).click();
    await h.page.locator('.variable-draft textarea').fill('5');
    await h.page.locator('.variable-draft').getByRole('button', { name: 'Save' }).click();
    await h.page.locator('table.variables tr[data-variable="amount"] .value', { hasText: /^5$/ }).waitFor();
    const edited = (await h.t.api.get(`/api/instances/${id}`)).body;
    expect(edited.variables).toEqual({ amount: 5 });
    expect(edited.revision).toBe(revision + 1);
    expect(edited.status).toBe('incident');
    await h.page.locator('.timeline', { hasText: 'variables:edited' }).waitFor();
    await h.screenshot('incidents-03-variable-fixed');

    await h.page.goBack();
    await h.page.waitForURL(/#\/incidents$/);
    await row.click();
    await details.getByRole('button', { name: 'Retry' }).click();
    await h.page.locator('.notice', { hasText: 'Retried' }).waitFor();
    await waitFor(async () =>
      (await h.page.locator(`table.incident-list tr[data-instance-id="${id}"]`).count()) === 0 ? true : undefined,
    );
    await h.screenshot('incidents-04-retried');

    const retried = await fetchOne(h.t.api, 'payout-worker', 'pay');
    expect(retried.instanceId).toBe(id);
    expect(retried.variables.amount).toBe(5);
    expect(await work(retried)).toBe('completed');
    await waitForStatus(h.t.api, id, 'completed');
    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    await h.page.locator('.status[data-status="completed"]').waitFor();
    await h.screenshot('incidents-05-completed');
    expect(h.consoleErrors).toEqual([]);
  });

  it('given an edit made on a revision that changed meanwhile, then the view says so and offers a reload; nothing changes', async () => {
    const id = await failedInstance(-1);
    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    const amountRow = h.page.locator('table.variables tr[data-variable="amount"]');
    await amountRow.getByRole('button', { name: 'Edit' }).click();
    // Someone else edits first.
    const read = (await h.t.api.get(`/api/instances/${id}`)).body;
    expect((await h.t.api.patch(`/api/instances/${id}/variables`, { revision: read.revision, set: { note: 'x' } })).status).toBe(
      200,
    );
    await h.page.locator('.variable-draft textarea').fill('1');
    await h.page.locator('.variable-draft').getByRole('button', { name: 'Save' }).click();
    await h.page.locator('.variables-error[data-stale="true"]', { hasText: 'changed meanwhile' }).waitFor();
    await h.screenshot('incidents-06-changed-meanwhile');
    expect((await h.t.api.get(`/api/instances/${id}`)).body.variables).toEqual({ amount: -1, note: 'x' });
    await h.page.getByRole('button', { name: 'Reload' }).click();
    await h.page.locator('table.variables tr[data-variable="note"]').waitFor();
    // Chromium logs the refused request itself; that one line is expected, nothing else.
    expect(h.consoleErrors.splice(0)).toEqual(['Failed to load resource: the server responded with a status of 409 (Conflict)']);
  });

  it('given several incidents ticked, then "Retry selected" retries each and the worker completes them', async () => {
    const ids = [await failedInstance(-2), await failedInstance(-3)];
    for (const id of ids) {
      const { revision } = (await h.t.api.get(`/api/instances/${id}`)).body;
      expect((await h.t.api.patch(`/api/instances/${id}/variables`, { revision, set: { amount: 2 } })).status).toBe(200);
    }
    await h.page.goto(`${h.t.url}/#/incidents`);
    for (const id of ids) {
      const row = h.page.locator(`table.incident-list tr[data-instance-id="${id}"]`);
      await row.locator('input[type="checkbox"]').check();
    }
    await h.page.locator('input[name="retries-many"]').fill('2');
    await h.page.getByRole('button', { name: 'Retry selected (2)' }).click();
    await h.page.locator('.notice', { hasText: 'Retried 2 incidents' }).waitFor();
    for (const id of ids) {
      const detail = (await h.t.api.get(`/api/instances/${id}`)).body;
      expect(detail.tasks).toEqual([expect.objectContaining({ state: 'ready', retriesLeft: 2 })]);
    }
    for (let i = 0; i < ids.length; i++) expect(await work(await fetchOne(h.t.api, 'payout-worker', 'pay'))).toBe('completed');
    for (const id of ids) await waitForStatus(h.t.api, id, 'completed');
    // The page follows the list: the retried incidents leave it.
    for (const id of ids) await h.page.locator(`table.incident-list tr[data-instance-id="${id}"]`).waitFor({ state: 'detached' });
    await h.screenshot('incidents-07-retried-selected');
    expect(h.consoleErrors).toEqual([]);
  });

  it('given a running instance, then the operator suspends it from the instance view, no worker gets its task, and after Resume the worker completes it', async () => {
    const id = await start(h.t.api, 'payout', { variables: { amount: 4 } });
    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    await h.page.getByRole('button', { name: 'Suspend' }).click();
    await h.page.locator('.page-head .status-suspended').waitFor();
    await h.page.getByRole('button', { name: 'Resume' }).waitFor();
    await h.screenshot('incidents-08-suspended');
    expect((await h.t.api.get(`/api/instances/${id}`)).body.suspended).toBe(true);
    expect(await fetchTasks(h.t.api, 'payout-worker', ['pay'], { waitMs: 0 })).toEqual([]);

    await h.page.getByRole('button', { name: 'Resume' }).click();
    await h.page.locator('.page-head .status-suspended').waitFor({ state: 'detached' });
    expect(await work(await fetchOne(h.t.api, 'payout-worker', 'pay'))).toBe('completed');
    await h.page.locator('.page-head [data-status="completed"]').waitFor();
    expect(h.consoleErrors).toEqual([]);
  });

  it('given an instance with more than a page of history, then the instance view shows every event, the newest past the first page included', async () => {
    const id = await start(h.t.api, 'payout', { variables: { amount: 0 } });
    let revision = (await h.t.api.get(`/api/instances/${id}`)).body.revision as number;
    for (let n = 1; n <= 1_005; n++) {
      const res = await h.t.api.patch(`/api/instances/${id}/variables`, { revision, set: { amount: n } });
      expect(res.status).toBe(200);
      revision = res.body.revision;
    }
    const total = (await h.t.api.get(`/api/instances/${id}/history?limit=5000`)).body.items.length;
    expect(total).toBeGreaterThan(1_005);
    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    await h.page.locator('.timeline li', { hasText: 'instance:started' }).waitFor();
    expect(await h.page.locator('.timeline li', { hasText: 'variables:edited' }).count()).toBe(1_005);
    expect(h.consoleErrors).toEqual([]);
  }, 120_000);

  it('given an instance view open, when the instance is migrated to a version that renames a task, then the view reads the new diagram and names the step as it now is', async () => {
    const xml = (await readFile(path.resolve('samples/order.bpmn'), 'utf8')).replaceAll('"order"', '"order-moved"');
    expect((await h.t.api.post('/api/definitions', { xml })).status).toBe(201);
    const id = await start(h.t.api, 'order-moved', { variables: { amount: 10 } });
    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    const step = h.page.locator('.timeline .step-name[data-step-id="Task_ReserveStock"]').first();
    await expect(step.textContent()).resolves.toBe('Reserve stock');

    const renamed = xml.replace('name="Reserve stock"', 'name="Reserve stock (checked)"');
    expect((await h.t.api.post('/api/definitions', { xml: renamed })).body.version).toBe(2);
    expect((await h.t.api.post(`/api/instances/${id}/migrate`, { version: 2 })).status).toBe(200);
    await h.page.locator('.meta a', { hasText: 'order-moved v2' }).waitFor();
    await h.page
      .locator('.timeline .step-name[data-step-id="Task_ReserveStock"]', { hasText: 'Reserve stock (checked)' })
      .first()
      .waitFor();
    expect(h.consoleErrors).toEqual([]);
  });
});
