// The editor as the browser tests use it: a fixture opened as a draft, an element selected,
// and the bpmn.io properties panel, whose groups are folded until opened and whose entries'
// inputs have the id `bio-properties-panel-<entry id>`.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { BrowserHarness } from './browser.ts';

/** Creates a draft from test/e2e/fixtures/<file>, opens it, and waits for its first lint. */
export async function openFixture(h: BrowserHarness, file: string, name: string): Promise<string> {
  const xml = await readFile(path.resolve('test/e2e/fixtures', file), 'utf8');
  const created = await h.t.api.post('/api/diagrams', { name, xml });
  await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);
  await h.page.locator('.problems-summary:not(:text("Not checked yet"))').waitFor();
  return created.body.id as string;
}

/** Selects an element (the background first: a click on the selected one opens no context pad) and unfolds the panel. */
export async function selectElement(page: Page, id: string): Promise<void> {
  await page.locator('.canvas').click({ position: { x: 600, y: 450 } });
  await page.locator(`g.djs-element[data-element-id="${id}"]`).click();
  await unfoldGroups(page);
}

/** Unfolds every group of the panel for the selected element (an unfolded group stays so). */
export async function unfoldGroups(page: Page): Promise<void> {
  await page.locator('.bio-properties-panel-group-header').first().waitFor();
  await page
    .locator('.bio-properties-panel-group-header:not(.open)')
    .evaluateAll((headers) => headers.forEach((header) => (header as HTMLElement).click()));
}

/** The input, select or textarea of a panel entry. */
export function entry(page: Page, entryId: string): Locator {
  return page.locator(`#bio-properties-panel-${entryId}`);
}

/** Types a value into an entry and leaves it (the panel writes after its input debounce). */
export async function fillEntry(page: Page, entryId: string, value: string): Promise<void> {
  const input = entry(page, entryId);
  await input.fill(value);
  await input.blur();
}
