// Scopes in the instance view: a loop's pass shows on the step every pass starts at and the
// history groups each pass's events under it; a repeating boundary shows how often it fired and
// groups each firing's events; a call activity lists the instance it started, which links back
// to its parent.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, callBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../support/flows.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe('a loop in the instance view', () => {
  it('given a review sent back once, then the review shows pass 2 while it runs, the history names the passes, and 2 passes once done', async () => {
    await deploy(h.t.api, await readFile(path.resolve('samples/review-loop.bpmn'), 'utf8'));
    const id = await start(h.t.api, 'review-loop', { variables: { revisions: 0 } });
    const review = await fetchOne(h.t.api, 'loops-e2e', 'review-document');
    expect((await complete(h.t.api, review, 'loops-e2e', { approved: false })).status).toBe(204);
    const revise = await fetchOne(h.t.api, 'loops-e2e', 'revise-document');
    expect((await complete(h.t.api, revise, 'loops-e2e', { revisions: 1 })).status).toBe(204);
    const again = await fetchOne(h.t.api, 'loops-e2e', 'review-document');
    expect(again.scopePath).toBe('/loop:Task_Review#2');

    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    const badge = h.page.locator('.djs-overlays[data-container-id="Task_Review"] .baton-step-badge-loop');
    await badge.waitFor();
    await expect(badge.textContent()).resolves.toBe('pass 2');
    await expect(h.page.locator('.timeline .pass', { hasText: 'pass 2' }).count()).resolves.toBeGreaterThan(0);
    await expect(h.page.locator('.timeline .step-name', { hasText: 'loop at Review document' }).count()).resolves.toBeGreaterThan(
      0,
    );
    // The history groups each pass's events under the pass.
    const firstPass = h.page.locator('.timeline .scope-group[data-scope-path="/loop:Task_Review#1"]');
    await expect(firstPass.locator('summary').first().textContent()).resolves.toContain('pass 1');
    await expect(firstPass.locator('li .step-name', { hasText: 'Review document' }).count()).resolves.toBeGreaterThan(0);
    await expect(
      h.page.locator('.timeline .scope-group[data-scope-path="/loop:Task_Review#2"]').count(),
    ).resolves.toBeGreaterThan(0);

    expect((await complete(h.t.api, again, 'loops-e2e', { approved: true })).status).toBe(204);
    await waitForStatus(h.t.api, id, 'completed');
    await h.page.reload();
    await h.page
      .locator('.djs-overlays[data-container-id="Task_Review"] .baton-step-badge-loop', { hasText: '2 passes' })
      .waitFor();
    expect(h.consoleErrors).toEqual([]);
  });
});

describe('a repeating boundary in the instance view', () => {
  it('given a non-interrupting message boundary that fired twice, then it shows its firings and the history groups each firing', async () => {
    const key = 'e2e_repeat';
    await deploy(
      h.t.api,
      buildBpmn(
        key,
        [
          { id: 'start', type: 'startEvent' },
          { id: 'work', type: 'serviceTask', topic: `${key}-work` },
          { id: 'ping', type: 'boundaryEvent', attachedTo: 'work', interrupting: false, message: 'e2e-ping' },
          { id: 'notify', type: 'serviceTask', topic: `${key}-notify` },
          { id: 'end', type: 'endEvent' },
          { id: 'notified', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'work' },
          { from: 'work', to: 'end' },
          { from: 'ping', to: 'notify' },
          { from: 'notify', to: 'notified' },
        ],
      ),
    );
    const id = await start(h.t.api, key, { businessKey: 'e2e-r1' });
    await fetchOne(h.t.api, 'repeat-e2e', `${key}-work`);
    for (let i = 0; i < 2; i++) {
      expect((await h.t.api.post('/api/messages', { name: 'e2e-ping', correlationKey: 'e2e-r1' })).body.status).toBe('matched');
      expect((await complete(h.t.api, await fetchOne(h.t.api, 'repeat-e2e', `${key}-notify`), 'repeat-e2e')).status).toBe(204);
    }
    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    await h.page.locator('.djs-overlays[data-container-id="ping"] .baton-step-badge-loop', { hasText: 'fired 2×' }).waitFor();
    const second = h.page.locator('.timeline .scope-group[data-scope-path="/ping#2"]');
    await expect(second.locator('summary').first().textContent()).resolves.toContain('firing 2');
    await expect(second.locator('li', { hasText: 'notify' }).count()).resolves.toBeGreaterThan(0);
    expect(h.consoleErrors).toEqual([]);
  });
});

describe('a call activity in the instance view', () => {
  it('given a parent waiting on its child, then the parent lists the child with its status and links to it, and the child links back', async () => {
    await deploy(h.t.api, singleTaskBpmn('e2e_child', 'e2e-child'));
    await deploy(h.t.api, callBpmn('e2e_parent', 'e2e_child'));
    const id = await start(h.t.api, 'e2e_parent');
    const task = await fetchOne(h.t.api, 'calls-e2e', 'e2e-child');

    await h.page.goto(`${h.t.url}/#/instances/${id}`);
    const row = h.page.locator('table.called tbody tr[data-step-id="call"]');
    await row.waitFor();
    await expect(row.locator('.status').textContent()).resolves.toBe('running');
    await row.locator(`a[href="#/instances/${task.instanceId}"]`).click();
    const back = h.page.locator(`a.parent-link[href="#/instances/${id}"]`);
    await back.waitFor();
    expect(await h.page.locator('.meta').textContent()).toContain('called by');

    expect((await complete(h.t.api, task, 'calls-e2e')).status).toBe(204);
    await waitForStatus(h.t.api, id, 'completed');
    await back.click();
    await h.page.locator('table.called tbody tr[data-step-id="call"] .status', { hasText: 'completed' }).waitFor();
    expect(h.consoleErrors).toEqual([]);
  });
});
