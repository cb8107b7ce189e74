// The bpmn.io properties panel as the browser tests use it: groups are folded until opened,
// and each entry's input has the id `bio-properties-panel-<entry id>`.
import type { Locator, Page } from 'playwright-core';

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
