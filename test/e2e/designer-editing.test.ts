// What an analyst hits while editing: the deploy-refused banner after the problems are fixed,
// the key and name a new diagram deploys under, and Ctrl+Z inside a properties field
// mixed with the Undo button.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/server.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';
import { entry, fillEntry, openFixture, selectElement, unfoldGroups } from './support/panel.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function savedXml(id: string, test: (xml: string) => boolean, what: string): Promise<string> {
  return waitFor(
    async () => {
      const { body } = await h.t.api.get(`/api/diagrams/${id}`);
      return test(body.xml) ? (body.xml as string) : undefined;
    },
    10_000,
    what,
  );
}

describe('the deploy-refused banner', () => {
  it('given a refused deploy, when its problems are fixed, then the banner goes', async () => {
    await openFixture(h, 'no-topic.bpmn', 'Banner');
    await h.page.getByRole('button', { name: 'Deploy' }).click();
    const banner = h.page.getByText(/Deploy refused: 1 problem/);
    await banner.waitFor();
    await selectElement(h.page, 'work');
    await entry(h.page, 'implementationType').selectOption('external');
    await fillEntry(h.page, 'externalTopic', 'banner-topic');
    await h.page.locator('.problems-summary.good').waitFor();
    await banner.waitFor({ state: 'detached' });
    h.consoleErrors.splice(0); // the refused deploy's 400, logged by Chromium
  });
});

describe('problems in the analyst’s words', () => {
  it('given a plain task and a condition without "=", then each problem names the element and its fix, and the fixes make the diagram compile', async () => {
    const id = await openFixture(h, 'first-draft.bpmn', 'First draft');
    const row = (elementId: string) =>
      h.page.locator('.problem-row', { has: h.page.locator(`.problem[data-element-id="${elementId}"]`) });
    await expect(row('check').textContent()).resolves.toMatch(/'Check policy' is a plain task, which does nothing/);
    await expect(row('yes').textContent()).resolves.toMatch(
      /The condition of 'yes' needs "=" in front to be FEEL: = total > 1000/,
    );
    // The compiler's own words stay at hand.
    await expect(row('yes').locator('.problem').getAttribute('title')).resolves.toMatch(/neither FEEL nor JUEL/);

    await row('yes').locator('.problem-fix', { hasText: 'Add "="' }).click();
    await savedXml(id, (x) => x.includes('= total &gt; 1000'), 'the condition with =');
    await row('check').locator('.problem-fix', { hasText: 'Make it a service task' }).click();
    const topicRow = h.page.locator('.problem-row', { hasText: "Set Topic for 'Check policy'" });
    await topicRow.locator('.problem-fix', { hasText: 'Set topic' }).click();
    // The fix leaves the cursor in the topic field.
    await expect.poll(() => h.page.evaluate(() => document.activeElement?.id)).toBe('bio-properties-panel-externalTopic');
    await h.page.keyboard.type('check-policy');
    await h.page.keyboard.press('Tab');
    await h.page.locator('.problems-summary.good').waitFor();
    const xml = await savedXml(id, (x) => x.includes('camunda:topic="check-policy"'), 'the topic');
    expect(xml).toMatch(/<bpmn:serviceTask id="[^"]+" name="Check policy" camunda:type="external" camunda:topic="check-policy">/);
  });
});

describe('a new diagram', () => {
  it('given it is renamed, then its process key and name follow the name, the key can be edited, and deploy uses them', async () => {
    await h.page.goto(h.t.url);
    await h.page.getByRole('button', { name: 'New diagram' }).click();
    await h.page.locator('.problems-summary:not(:text("Not checked yet"))').waitFor();
    const name = h.page.getByLabel('Diagram name');
    await name.fill('Expense approval');
    await name.press('Enter');
    await expect.poll(() => name.inputValue()).toBe('Expense approval');
    // Nothing selected: the panel shows the process.
    await h.page.locator('.canvas').click({ position: { x: 600, y: 500 } });
    await unfoldGroups(h.page);
    await expect.poll(() => entry(h.page, 'id').inputValue()).toBe('expense-approval');
    await expect(entry(h.page, 'name').inputValue()).resolves.toBe('Expense approval');
    await fillEntry(h.page, 'id', 'expenses');
    await h.page.getByRole('button', { name: 'Deploy' }).click();
    await h.page.locator('.deploy-result').getByText('Deployed').waitFor();
    const { body } = await h.t.api.get('/api/definitions/expenses');
    expect(body).toMatchObject({ key: 'expenses' });
    expect(body.xml).toContain('<bpmn:process id="expenses" name="Expense approval"');
  });
});

describe('a new Zeebe diagram', () => {
  it('given Zeebe is chosen, then the diagram is written for Zeebe and the panel edits zeebe: attributes', async () => {
    await h.page.goto(h.t.url);
    await h.page.getByLabel('Dialect of a new diagram').selectOption('zeebe');
    await h.page.getByRole('button', { name: 'New diagram' }).click();
    await h.page.locator('.problems-summary:not(:text("Not checked yet"))').waitFor();
    await expect(h.page.locator('.side .dialect').textContent()).resolves.toBe('Zeebe (Camunda 8)');
    const id = h.page.url().split('/').pop()!;
    const { body } = await h.t.api.get(`/api/diagrams/${id}`);
    expect(body.xml).toContain('xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"');
    expect(body.xml).not.toContain('xmlns:camunda=');
  });
});

describe('zoom', () => {
  it('given the zoom buttons, then the diagram grows, shrinks and fits beside the palette', async () => {
    await openFixture(h, 'no-topic.bpmn', 'Zoom');
    const scale = () =>
      h.page.evaluate(() => {
        const m = document.querySelector('.canvas .viewport')?.getAttribute('transform') ?? '';
        return Number(/matrix\(([\d.]+)/.exec(m)?.[1] ?? 1);
      });
    const before = await scale();
    await h.page.getByRole('button', { name: 'Zoom in' }).click();
    await expect.poll(scale).toBeCloseTo(before * 1.25, 2);
    await h.page.getByRole('button', { name: 'Zoom out' }).click();
    await h.page.getByRole('button', { name: 'Zoom out' }).click();
    await expect.poll(scale).toBeCloseTo(before * 0.8, 2);
    await h.page.getByRole('button', { name: 'Fit', exact: true }).click();
    await expect.poll(scale).toBeCloseTo(before, 2);
  });
});

describe('undo', () => {
  it('given Ctrl+Z inside a properties field, then it undoes the field’s last change, and the Undo button the change before it', async () => {
    const id = await openFixture(h, 'no-topic.bpmn', 'Undo');
    await selectElement(h.page, 'work');
    await entry(h.page, 'implementationType').selectOption('external');
    await fillEntry(h.page, 'externalTopic', 'first');
    await savedXml(id, (x) => x.includes('camunda:topic="first"'), 'topic first');
    const topic = entry(h.page, 'externalTopic');
    await topic.fill('second');
    await topic.press('Control+z');
    await expect.poll(() => topic.inputValue()).toBe('first');
    await savedXml(id, (x) => x.includes('camunda:topic="first"'), 'topic first again');
    await h.page.getByRole('button', { name: 'Undo' }).click();
    await expect.poll(() => topic.inputValue()).toBe('');
    const xml = await savedXml(id, (x) => !/camunda:topic="[^"]/.test(x), 'no topic');
    expect(xml).toContain('camunda:type="external"'); // the change before the topic stays
    await h.page.getByRole('button', { name: 'Redo' }).click();
    await expect.poll(() => topic.inputValue()).toBe('first');
  });
});
