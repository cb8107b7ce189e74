// The replace menu offers what Baton runs: the element types deploy refuses wherever they stand
// (transaction and ad-hoc subprocesses, complex gateways, cancel end events) are not offered,
// the ones it runs are.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../support/bpmn.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const xml = inlineDefinitions('replace_menu', [
  '<bpmn:startEvent id="start" />',
  `<bpmn:subProcess id="sub"><bpmn:startEvent id="subStart" />${task('inner', 'replace_menu')}<bpmn:endEvent id="subEnd" />${flow('s1', 'subStart', 'inner')}${flow('s2', 'inner', 'subEnd')}</bpmn:subProcess>`,
  '<bpmn:exclusiveGateway id="choose" />',
  '<bpmn:endEvent id="end" />',
  flow('f1', 'start', 'sub'),
  flow('f2', 'sub', 'choose'),
  flow('f3', 'choose', 'end'),
]);

async function replaceEntries(elementId: string): Promise<string[]> {
  await h.page
    .locator(`g.djs-element[data-element-id="${elementId}"]`)
    .first()
    .click({ position: { x: 5, y: 5 } });
  await h.page.locator('.djs-context-pad [data-action="replace"]').click();
  await h.page.locator('.djs-popup [data-id]').first().waitFor();
  const ids = await h.page
    .locator('.djs-popup [data-id]')
    .evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.id ?? ''));
  await h.page.keyboard.press('Escape');
  return ids;
}

describe('the replace menu', () => {
  it('given a subprocess, a gateway and an end event, then it offers what Baton runs and nothing deploy refuses', async () => {
    const created = await h.t.api.post('/api/diagrams', { name: 'Replace menu', xml });
    await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);
    await h.page.locator('.problems-summary:not(:text("Not checked yet"))').waitFor();

    const sub = await replaceEntries('sub');
    // Laid out collapsed (the file has no diagram): bpmn-js offers it the task types and ad-hoc subprocesses.
    expect(sub).toEqual(
      expect.arrayContaining(['replace-with-call-activity', 'replace-with-user-task', 'replace-with-expanded-subprocess']),
    );
    for (const refused of [
      'replace-with-transaction',
      'replace-with-ad-hoc-subprocess',
      'replace-with-collapsed-ad-hoc-subprocess',
    ])
      expect(sub).not.toContain(refused);

    const gateway = await replaceEntries('choose');
    expect(gateway).toEqual(expect.arrayContaining(['replace-with-parallel-gateway', 'replace-with-inclusive-gateway']));
    expect(gateway).not.toContain('replace-with-complex-gateway');

    const end = await replaceEntries('end');
    expect(end).toEqual(expect.arrayContaining(['replace-with-terminate-end', 'replace-with-error-end']));
    expect(end).not.toContain('replace-with-cancel-end');
    expect(h.consoleErrors).toEqual([]);
  });
});
