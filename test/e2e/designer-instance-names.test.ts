// The run views name steps as the analyst drew them (the id stays as the tooltip), and the
// history says when a gateway decided over a variable the instance does not have.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, start, waitForStatus } from '../support/flows.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe('an instance by the names of its steps', () => {
  it('given an order started without "total", then tasks and history name the steps and the history says the review gateway took its default flow because "total" was not set', async () => {
    await deploy(h.t.api, await readFile(path.resolve('samples/order.bpmn'), 'utf8'));
    const id = await start(h.t.api, 'order', { variables: { orderId: 'o-1' } });
    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    // An open task by its name.
    await h.page.locator('table.tasks .step-name[data-step-id="Task_ChargeCard"]', { hasText: 'Charge card' }).waitFor();
    await expect(h.page.locator('table.tasks .step-name[data-step-id="Task_ChargeCard"]').getAttribute('title')).resolves.toBe(
      'Task_ChargeCard',
    );

    for (const topic of ['reserve-stock', 'charge-card']) {
      const task = await fetchOne(h.t.api, 'names-e2e', topic);
      expect((await complete(h.t.api, task, 'names-e2e')).status).toBe(204);
    }
    await waitForStatus(h.t.api, id, 'completed');
    const note = h.page.locator('.timeline .decision-note');
    await note.waitFor();
    await expect(note.textContent()).resolves.toMatch(
      /"total" was not set, so the conditions reading it did not hold: the default flow was taken/,
    );
    await expect(h.page.locator('.timeline .step-name', { hasText: 'Total above 100?' }).count()).resolves.toBeGreaterThan(0);
    expect(h.consoleErrors).toEqual([]);
  });
});
