// The designer in headless Chromium: open, import, lint, fix, deploy, start.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe('designer', () => {
  it('given the server, when / opens, then the diagram list shows with an empty state and no console errors', async () => {
    await h.page.goto(h.t.url);
    await h.page.getByRole('heading', { name: 'Diagrams' }).waitFor();
    await h.page.getByText('No diagrams yet').waitFor();
    expect(h.consoleErrors).toEqual([]);
  });

  it('given a new diagram, when it opens, then the modeler shows its palette and the start event', async () => {
    await h.page.getByRole('button', { name: 'New diagram' }).click();
    await h.page.locator('.djs-palette .entry').first().waitFor();
    expect(await h.page.locator('.djs-palette .entry').count()).toBeGreaterThan(5);
    await h.page.locator('[data-element-id="StartEvent_1"]').first().waitFor();
    await h.page.locator('.djs-minimap').waitFor({ state: 'attached' });
    await h.screenshot('01-new-diagram');
    expect(h.consoleErrors).toEqual([]);
  });
});
