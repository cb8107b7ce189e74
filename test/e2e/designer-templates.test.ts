// A worker publishes an element template for its topic; the analyst finds it in the template
// chooser of a task, choosing it fills the topic and the mappings, the canvas shows that a
// worker fetches the topic, and the deployed task is completed by that worker.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../../runtime/worker/index.ts';
import { waitFor } from '../support/server.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';
import { unfoldGroups } from './support/panel.ts';

const template = JSON.parse(readFileSync(path.resolve('test/fixtures/element-templates/camunda7-charge-card.json'), 'utf8'));

let h: BrowserHarness;
let worker: Worker;
const charged: unknown[] = [];
beforeAll(async () => {
  h = await openDesigner();
  worker = createWorker({ baseUrl: h.t.url, workerId: 'billing-e2e', pollWaitMs: 1_000, stopGraceMs: 500 })
    .subscribe(
      'charge-card',
      async (task) => {
        charged.push(task.variables);
        return { chargeId: 'ch_e2e' };
      },
      { template },
    )
    .start();
  await worker.ready();
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await h?.close();
});

describe('element templates from workers', () => {
  it('given a worker with a template, when the analyst chooses it for a task, then the topic and mappings are filled, the badge shows the worker, and the worker completes the deployed task', async () => {
    const xml = readFileSync(path.resolve('test/e2e/fixtures/no-topic.bpmn'), 'utf8');
    const created = await h.t.api.post('/api/diagrams', { name: 'Templated order', xml });
    await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);
    await h.page.locator('.problems-summary:not(:text("Not checked yet"))').waitFor();

    // The replace menu offers the worker's template beside the plain types.
    await h.page.locator('g.djs-element[data-element-id="work"]').click();
    await h.page.locator('.djs-context-pad [data-action="replace"]').click();
    await h.page.locator('.djs-popup [data-id="replace-with-template-dev.baton.samples.charge-card"]').waitFor();
    await h.page.keyboard.press('Escape');

    // The panel's template chooser applies it.
    await unfoldGroups(h.page);
    await h.page
      .locator('.bio-properties-panel-group-header', { hasText: 'Template' })
      .getByRole('button', { name: /Select/ })
      .click();
    await h.page.locator('.djs-popup').getByText('Charge card').click();
    await h.page.locator('.problems-summary.good').waitFor();
    const saved = await waitFor(async () => {
      const { body } = await h.t.api.get(`/api/diagrams/${created.body.id}`);
      return body.xml.includes('camunda:topic="charge-card"') ? (body.xml as string) : undefined;
    });
    expect(saved).toContain('camunda:modelerTemplate="dev.baton.samples.charge-card"');
    expect(saved).toMatch(/<camunda:inputParameter name="amount">\$\{amount\}<\/camunda:inputParameter>/);

    // The canvas says a worker fetches that topic.
    await expect
      .poll(() => h.page.locator('.baton-worker-badge[data-element-id="work"]').getAttribute('class'), { timeout: 20_000 })
      .toMatch(/\bseen\b/);

    await h.page.getByRole('button', { name: 'Deploy' }).click();
    await h.page.locator('.deploy-result').getByText('Deployed').waitFor();
    const started = await h.t.api.post('/api/instances', { definitionKey: 'e2e-order', variables: { amount: 42 } });
    expect(started.status).toBe(201);
    await expect
      .poll(async () => (await h.t.api.get(`/api/instances/${started.body.id}`)).body.status, { timeout: 20_000 })
      .toBe('completed');
    expect(charged).toEqual([expect.objectContaining({ amount: 42 })]);
    expect(h.consoleErrors).toEqual([]);
  });
});
