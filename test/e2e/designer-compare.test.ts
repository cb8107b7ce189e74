// Before deploying, the editor says what is deployed under the diagram's key and, on Compare,
// marks what the draft changes against it and whether the steps (the fingerprint) change.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDesigner, type BrowserHarness } from './support/browser.ts';
import { entry, fillEntry, unfoldGroups } from './support/panel.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe('version compare', () => {
  it('given the order sample deployed, when a task is appended, then the draft shows as changed, Compare marks the new task added and says the steps change', async () => {
    const xml = await readFile(path.resolve('samples/order.bpmn'), 'utf8');
    const deployed = await h.t.api.post('/api/definitions', { xml });
    expect(deployed.status).toBe(201);
    const created = await h.t.api.post('/api/diagrams', { name: 'Order to compare', xml });
    await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);
    const status = h.page.locator('.deployed-status');
    await status.getByText('the draft is the same').waitFor();
    await expect(status.textContent()).resolves.toMatch(/Deployed as\s+order v1/);
    // Reopened, the draft keeps its start form for what is deployed.
    await h.page.locator('baton-start-form').waitFor();

    await h.page.locator('g.djs-element[data-element-id="Task_ReviewOrder"]').click();
    await h.page.locator('.djs-context-pad [data-action="append.append-task"]').click();
    await status.getByText('draft changed since').waitFor();
    const added = await h.page.evaluate(() =>
      [...document.querySelectorAll('g.djs-shape')]
        .map((g) => g.getAttribute('data-element-id'))
        .filter((id) => id?.startsWith('Activity_')),
    );
    expect(added).toHaveLength(1);

    await h.page.getByRole('button', { name: 'Compare' }).click();
    await h.page.locator(`g.djs-element.baton-diff-added[data-element-id="${added[0]}"]`).waitFor();
    expect(await h.page.locator('g.djs-element.baton-diff-added[data-element-id="Task_ReviewOrder"]').count()).toBe(0);
    const summary = h.page.locator('.compare-summary');
    await expect.poll(() => summary.textContent()).toMatch(/2 added/); // the task and its flow
    // A plain task compiles (it passes through), so the steps already differ; as a service task with a topic they still do.
    await expect.poll(() => summary.textContent()).toMatch(/the steps change/);
    await h.page.locator('.canvas').click({ position: { x: 600, y: 450 } });
    await h.page.locator(`g.djs-element[data-element-id="${added[0]}"]`).click();
    await h.page.locator('.djs-context-pad [data-action="replace"]').click();
    await h.page.locator('.djs-popup [data-id="replace-with-service-task"]').click();
    await unfoldGroups(h.page);
    await entry(h.page, 'implementationType').selectOption('external');
    await fillEntry(h.page, 'externalTopic', 'notify');
    await expect.poll(() => summary.textContent()).toMatch(/the steps change/);
    await h.screenshot('11-compare');

    // Compare off: the marks go.
    await h.page.getByRole('button', { name: 'Compare' }).click();
    expect(await h.page.locator('g.djs-element.baton-diff-added').count()).toBe(0);
    expect(h.consoleErrors).toEqual([]);
  });

  it('given a diagram whose key was never deployed, then the editor says so and Compare is off', async () => {
    const xml = (await readFile(path.resolve('samples/order.bpmn'), 'utf8')).replaceAll('"order"', '"order-never"');
    const created = await h.t.api.post('/api/diagrams', { name: 'Never deployed', xml });
    await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);
    await h.page.locator('.deployed-status').getByText('Not deployed yet').waitFor();
    await expect(h.page.getByRole('button', { name: 'Compare' }).isDisabled()).resolves.toBe(true);
    expect(h.consoleErrors).toEqual([]);
  });
});
