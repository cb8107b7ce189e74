// Token simulation in the editor: the analyst walks the sample order process before
// deploying, starts tokens, switches the review gateway's flow between them, and sees the
// process finish at each end event.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const pad = (elementId: string, title: string) =>
  h.page.locator(`.djs-overlays[data-container-id="${elementId}"] .bts-context-pad[title="${title}"]`);

describe('token simulation', () => {
  it('given the order sample, when tokens start on either flow of the review gateway, then the process finishes at each end event', async () => {
    const xml = await readFile(path.resolve('samples/order.bpmn'), 'utf8');
    const created = await h.t.api.post('/api/diagrams', { name: 'Simulated order', xml });
    await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);
    await h.page.locator('.problems-summary.good').waitFor();

    await h.page.locator('.bts-toggle-mode').click();
    await h.page.locator('.bts-toggle-mode', { hasText: 'Token Simulation' }).waitFor();
    await h.page.locator('[title="Toggle Simulation Log"]').click();
    const log = h.page.locator('.bts-log .bts-content');
    const ends = async (): Promise<string[]> =>
      (await log.locator('.bts-entry .bts-text').allTextContents()).filter((t) => /^Order (reviewed|done)$/.test(t));

    // One token down the review gateway's current flow, then one down the other after the
    // analyst switches it: between them both end events are reached, one each.
    await pad('StartEvent_Order', 'Trigger Event').click();
    await expect.poll(async () => (await log.getByText('Process finished').count()) === 1, { timeout: 20_000 }).toBe(true);
    const first = await ends();
    expect(first).toHaveLength(1);
    await pad('Gateway_Review', 'Set Sequence Flow').click();
    await pad('StartEvent_Order', 'Trigger Event').click();
    await expect.poll(async () => (await log.getByText('Process finished').count()) === 2, { timeout: 20_000 }).toBe(true);
    expect((await ends()).sort()).toEqual(['Order done', 'Order reviewed']);
    await h.screenshot('10-token-simulation');

    // Leaving the simulation gives the modeler back, unchanged.
    await h.page.locator('.bts-toggle-mode').click();
    expect((await h.t.api.get(`/api/diagrams/${created.body.id}`)).body.xml).toBe(xml);
    expect(h.consoleErrors).toEqual([]);
  });
});
