// An instance of a loop in the designer: the pass shows on the step every pass starts at, and
// the history says which pass each step event belongs to.
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

    expect((await complete(h.t.api, again, 'loops-e2e', { approved: true })).status).toBe(204);
    await waitForStatus(h.t.api, id, 'completed');
    await h.page.reload();
    await h.page
      .locator('.djs-overlays[data-container-id="Task_Review"] .baton-step-badge-loop', { hasText: '2 passes' })
      .waitFor();
    expect(h.consoleErrors).toEqual([]);
  });
});
