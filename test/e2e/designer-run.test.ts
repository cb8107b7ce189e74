// The analyst's path in headless Chromium: import a diagram, see the lint marker on a task
// without a topic, fix it in the properties panel, deploy, start an instance with variables,
// and watch the instance view while a worker (driven through the REST API) completes the task.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/server.ts';
import { entry, fillEntry, unfoldGroups } from './support/panel.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

const FIXTURE = path.resolve('test/e2e/fixtures/no-topic.bpmn');

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const shape = (id: string, marker = '') => h.page.locator(`g.djs-element${marker}[data-element-id="${id}"]`);

describe('designer: lint, deploy, start, watch', () => {
  let diagramId = '';

  it('given an imported diagram whose task has no topic, then the task is marked and listed; choosing the problem selects it', async () => {
    await h.page.goto(h.t.url);
    await h.page.getByRole('heading', { name: 'Diagrams' }).waitFor();
    await h.page.locator('#import-file').setInputFiles(FIXTURE);
    await h.page.waitForURL(/#\/diagrams\/[0-9a-f-]{36}$/);
    diagramId = h.page.url().split('/').pop()!;
    await shape('work', '.baton-lint-error').waitFor();
    const problem = h.page.locator('.problem[data-element-id="work"]');
    await expect(problem.textContent()).resolves.toMatch(/topic/i);
    await h.screenshot('02-lint-marker');
    await h.page.getByRole('button', { name: 'Deploy' }).click();
    await h.page.getByText('Deploy refused: 1 problem(s)').waitFor();
    expect((await h.t.api.get('/api/definitions/e2e-order')).status).toBe(404);
    // Chromium logs the refused request itself; that one line is expected, nothing else.
    await waitFor(async () => (h.consoleErrors.length > 0 ? true : undefined));
    expect(h.consoleErrors.splice(0)).toEqual([
      'Failed to load resource: the server responded with a status of 400 (Bad Request)',
    ]);
    await problem.click();
    await shape('work', '.selected').waitFor();
    await expect.poll(() => entry(h.page, 'id').inputValue()).toBe('work');
  });

  it('given the topic is set in the properties panel, then the marker goes, the draft autosaves and undo brings the problem back', async () => {
    await unfoldGroups(h.page);
    await entry(h.page, 'implementationType').selectOption('external');
    await fillEntry(h.page, 'externalTopic', 'e2e-charge');
    await h.page.locator('.problems-summary.good').waitFor();
    expect(await shape('work', '.baton-lint-error').count()).toBe(0);
    await h.page.locator('.save-state.save-saved').waitFor();
    const saved = await h.t.api.get(`/api/diagrams/${diagramId}`);
    expect(saved.body.xml).toContain('camunda:topic="e2e-charge"');
    expect(saved.body.xml).toContain('camunda:type="external"');

    await h.page.getByRole('button', { name: 'Undo' }).click();
    await shape('work', '.baton-lint-error').waitFor();
    await h.page.getByRole('button', { name: 'Redo' }).click();
    await h.page.locator('.problems-summary.good').waitFor();
  });

  it('when Deploy is pressed, then the new version and fingerprint show, matching the API', async () => {
    await h.page.getByRole('button', { name: 'Deploy' }).click();
    await h.page.locator('.deploy-result').waitFor();
    const definition = (await h.t.api.get('/api/definitions/e2e-order')).body;
    expect(definition.version).toBe(1);
    await expect(h.page.locator('.deploy-version').textContent()).resolves.toBe('version 1');
    await expect(h.page.locator('.deploy-fingerprint').getAttribute('title')).resolves.toBe(definition.fingerprint);
    await h.screenshot('03-deployed');
  });

  it('given variables that are not a JSON object, then nothing is sent; valid ones start the instance', async () => {
    await h.page.locator('#start-business-key').fill('e2e-1');
    await h.page.locator('#start-variables').fill('{"total": ');
    await h.page.getByRole('button', { name: 'Start instance' }).click();
    await h.page.getByText('Variables are not valid JSON').waitFor();
    await h.page.locator('#start-variables').fill('[1, 2]');
    await h.page.getByRole('button', { name: 'Start instance' }).click();
    await h.page.getByText('Variables must be a JSON object').waitFor();
    expect((await h.t.api.get('/api/instances')).body.items).toEqual([]);

    await h.page.locator('#start-variables').fill('{"total": 120}');
    await h.page.getByRole('button', { name: 'Start instance' }).click();
    await h.page.locator('.started a').waitFor();
    const [instance] = (await h.t.api.get('/api/instances')).body.items;
    expect(instance).toMatchObject({ businessKey: 'e2e-1', status: 'running' });
    expect((await h.t.api.get(`/api/instances/${instance.id}`)).body.variables).toEqual({ total: 120 });
  });

  it('given the instance view, when a worker completes the task, then the task shows active and then completed, live', async () => {
    await h.page.locator('.started a').click();
    await h.page.waitForURL(/#\/instances\//);
    await shape('work', '.baton-step-active').waitFor();
    await h.page.locator('.tasks tr[data-step-id="work"]').waitFor();
    await h.screenshot('04-instance-active');

    const [task] = (
      await h.t.api.post('/api/external-tasks/fetch-and-lock', {
        workerId: 'e2e-worker',
        maxTasks: 1,
        topics: [{ name: 'e2e-charge', lockDurationMs: 30_000 }],
      })
    ).body as { id: string; lockToken: string }[];
    expect(task).toBeDefined();
    await h.page.locator('.tasks td', { hasText: 'e2e-worker' }).waitFor();
    const done = await h.t.api.post(`/api/external-tasks/${task!.id}/complete`, {
      workerId: 'e2e-worker',
      lockToken: task!.lockToken,
      variables: { charged: 120 },
    });
    expect(done.status).toBe(204);

    await h.page.locator('.status[data-status="completed"]').waitFor();
    await shape('work', '.baton-step-completed').waitFor();
    await shape('end', '.baton-step-completed').waitFor();
    await h.page.locator('.timeline', { hasText: 'instance:completed' }).waitFor();
    await expect(h.page.locator('.variables tr[data-variable="charged"] .value').textContent()).resolves.toBe('120');
    await h.screenshot('05-instance-completed');
    await waitFor(async () =>
      (await h.t.api.get('/api/instances?status=completed')).body.items.length === 1 ? true : undefined,
    );
  });

  it('then the definition view shows the heatmap and the page logged no console errors', async () => {
    await h.page.goto(`${h.t.url}/#/definitions/e2e-order`);
    await h.page.locator('.baton-heat-badge[data-element-id="work"]').waitFor();
    await expect(h.page.locator('.baton-heat-badge[data-element-id="work"]').textContent()).resolves.toBe('1');
    await h.screenshot('06-heatmap');

    // A second version has no instances yet; the first keeps its counts.
    const v1 = (await h.t.api.get('/api/definitions/e2e-order')).body;
    expect(
      (
        await h.t.api.post('/api/definitions', {
          xml: v1.xml.replace('camunda:topic="e2e-charge"', 'camunda:topic="e2e-charge-2"'),
        })
      ).body.version,
    ).toBe(2);
    await h.page.reload();
    await h.page.locator('.versions strong', { hasText: 'v2' }).waitFor();
    await expect(h.page.locator('.definition-view .meta').textContent()).resolves.toContain('none yet');
    await h.page.locator('.versions').getByRole('link', { name: 'v1' }).click();
    await h.page.locator('.baton-heat-badge[data-element-id="work"]').waitFor();
    expect(h.consoleErrors).toEqual([]);
  });

  it('given more instances of a version than the heatmap counts, then its view says it shows the newest 1,000; a version with fewer says nothing of it', async () => {
    // The heatmap counts a version's newest 1,000 instances (GET /heatmap without ?limit=).
    for (let i = 0; i < 1001; i += 77) {
      const starts = Array.from({ length: Math.min(77, 1001 - i) }, () =>
        h.t.api.post('/api/instances', { definitionKey: 'e2e-order' }),
      );
      expect((await Promise.all(starts)).filter((r) => r.status !== 201)).toEqual([]);
    }
    await h.page.goto(`${h.t.url}/#/definitions/e2e-order?version=2`);
    await h.page.locator('.definition-view .meta', { hasText: 'the newest 1,000 instances' }).waitFor();
    await expect(h.page.locator('.definition-view .meta').textContent()).resolves.toMatch(
      /the newest 1,000 instances: running 1000/,
    );
    await h.page.locator('.versions').getByRole('link', { name: 'v1' }).click();
    await h.page.locator('.versions strong', { hasText: 'v1' }).waitFor();
    await h.page.locator('.baton-heat-badge[data-element-id="work"]').waitFor();
    const v1Meta = await h.page.locator('.definition-view .meta').textContent();
    expect(v1Meta).toMatch(/· instances: completed 1/);
    expect(v1Meta).not.toContain('newest');
    expect(h.consoleErrors).toEqual([]);
  });
});
