// The bpmn.io properties panel in the dialect of the file: a Camunda 7 diagram edits camunda:
// attributes, a Zeebe diagram zeebe: ones. Topic, retries and an input mapping are set in the
// panel, survive a reload, and deploy; the deployed plan runs the mapping, and lint says nothing of it.
// A user task's assignment, schedule, priority and generated form are edited there too.
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

async function savedXml(id: string, ...contains: string[]): Promise<string> {
  return waitFor(
    async () => {
      const { body } = await h.t.api.get(`/api/diagrams/${id}`);
      return contains.every((c) => body.xml.includes(c)) ? (body.xml as string) : undefined;
    },
    10_000,
    `the saved XML to contain ${contains.join(', ')}`,
  );
}

async function deployAndExpectMappingRun(key: string): Promise<void> {
  await h.page.getByRole('button', { name: 'Deploy' }).click();
  await h.page.locator('.deploy-result').getByText('Deployed').waitFor();
  const { body } = await h.t.api.get(`/api/definitions/${key}`);
  expect(body).toMatchObject({ key });
  expect(body.plan.steps.find((s: { id: string }) => s.id === 'work')?.io?.inputs).toEqual([
    expect.objectContaining({ target: 'amount', feel: 'total' }),
  ]);
  expect(await h.page.locator('.problem', { hasText: 'input/output mappings' }).count()).toBe(0);
}

describe('a Camunda 7 diagram', () => {
  it('given topic, retries and an input mapping set in the panel, then a reload shows them, the XML holds them and deploy accepts them', async () => {
    const id = await openFixture(h, 'no-topic.bpmn', 'Camunda 7 properties');
    await expect(h.page.locator('.side .dialect').textContent()).resolves.toBe('Camunda 7');
    await selectElement(h.page, 'work');
    await entry(h.page, 'implementationType').selectOption('external');
    await fillEntry(h.page, 'externalTopic', 'c7-charge');
    await fillEntry(h.page, 'batonRetries', '4');
    await h.page.locator('[data-group-id="group-CamundaPlatform__Input"] .bio-properties-panel-add-entry').click();
    await fillEntry(h.page, 'work-inputParameter-0-name', 'amount');
    await fillEntry(h.page, 'work-inputParameter-0-stringOrExpression', '${total}');
    const xml = await savedXml(
      id,
      'camunda:topic="c7-charge"',
      'baton:retries="4"',
      '<camunda:inputParameter name="amount">${total}',
    );
    expect(xml).toContain('camunda:type="external"');
    expect(xml).not.toContain('zeebe:');

    await h.page.reload();
    await h.page.locator('.problems-summary:not(:text("Not checked yet"))').waitFor();
    await selectElement(h.page, 'work');
    await expect.poll(() => entry(h.page, 'externalTopic').inputValue()).toBe('c7-charge');
    await expect(entry(h.page, 'batonRetries').inputValue()).resolves.toBe('4');
    await expect(entry(h.page, 'work-inputParameter-0-name').inputValue()).resolves.toBe('amount');
    await deployAndExpectMappingRun('e2e-order');
    expect(h.consoleErrors).toEqual([]);
  });
});

describe('a Zeebe diagram', () => {
  it('given job type, retries and an input mapping set in the panel, then a reload shows them, the XML holds them and deploy accepts them', async () => {
    const id = await openFixture(h, 'no-type-zeebe.bpmn', 'Zeebe properties');
    await expect(h.page.locator('.side .dialect').textContent()).resolves.toBe('Zeebe (Camunda 8)');
    await selectElement(h.page, 'work');
    await fillEntry(h.page, 'taskDefinitionType', 'zeebe-charge');
    await fillEntry(h.page, 'taskDefinitionRetries', '5');
    // The Zeebe panel's task definition replaces the Camunda 7 implementation and Baton's retries field.
    expect(await entry(h.page, 'implementationType').count()).toBe(0);
    expect(await entry(h.page, 'batonRetries').count()).toBe(0);
    await h.page.locator('[data-group-id="group-inputs"] .bio-properties-panel-add-entry').click();
    await fillEntry(h.page, 'work-input-0-target', 'amount');
    await entry(h.page, 'work-input-0-source').fill('total');
    // The FEEL editor may offer completions over the canvas: closed first, so the click lands on the canvas.
    await h.page.keyboard.press('Escape');
    await h.page.locator('.cm-tooltip').waitFor({ state: 'detached' });
    await h.page.locator('.canvas').click({ position: { x: 600, y: 500 } }); // leaves the FEEL editor
    const xml = await savedXml(id, 'type="zeebe-charge"', 'retries="5"', '<zeebe:input source="=total" target="amount" />');
    expect(xml).toMatch(/<zeebe:taskDefinition type="zeebe-charge" retries="5" \/>/);
    expect(xml).not.toContain('camunda:');

    await h.page.reload();
    await h.page.locator('.problems-summary:not(:text("Not checked yet"))').waitFor();
    await selectElement(h.page, 'work');
    await expect.poll(() => entry(h.page, 'taskDefinitionType').inputValue()).toBe('zeebe-charge');
    await expect(entry(h.page, 'taskDefinitionRetries').inputValue()).resolves.toBe('5');
    await expect(entry(h.page, 'work-input-0-target').inputValue()).resolves.toBe('amount');
    await deployAndExpectMappingRun('e2e-zeebe-order');
    expect(h.consoleErrors).toEqual([]);
  });
});

describe('a call activity in a Camunda 7 diagram', () => {
  it('given the called element, a pinned version and "all variables in" set in the panel, then the XML holds them and the deployed plan calls that version with every variable', async () => {
    const id = await openFixture(h, 'call-activity.bpmn', 'Camunda 7 call activity');
    await selectElement(h.page, 'work');
    await entry(h.page, 'calledElementType').selectOption('bpmn');
    await fillEntry(h.page, 'calledElement', 'e2e-shipping');
    await entry(h.page, 'calledElementBinding').selectOption('version');
    await fillEntry(h.page, 'calledElementVersion', '2');
    await entry(h.page, 'inMapping-propagation').check();
    const xml = await savedXml(id, 'calledElement="e2e-shipping"', 'camunda:calledElementVersion="2"', 'variables="all"');
    expect(xml).toContain('camunda:calledElementBinding="version"');

    await h.page.getByRole('button', { name: 'Deploy' }).click();
    await h.page.locator('.deploy-result').getByText('Deployed').waitFor();
    const { body } = await h.t.api.get('/api/definitions/e2e-caller');
    expect(body.plan.steps.find((s: { id: string }) => s.id === 'work')?.call).toMatchObject({
      process: { key: 'e2e-shipping' },
      binding: 'version',
      version: 2,
      inAll: true,
    });
    expect(h.consoleErrors).toEqual([]);
  });
});

describe('a user task in a Camunda 7 diagram', () => {
  it('given assignment, due date, priority and a generated form set in the panel, then the XML holds them and the deployed plan waits for a person with that form', async () => {
    const id = await openFixture(h, 'user-task.bpmn', 'Camunda 7 user task');
    await selectElement(h.page, 'work');
    await fillEntry(h.page, 'candidateGroups', 'sales, managers');
    await fillEntry(h.page, 'dueDate', 'P2D');
    await fillEntry(h.page, 'priority', '80');
    await entry(h.page, 'formType').selectOption('formData');
    await unfoldGroups(h.page);
    await h.page.locator('[data-group-id="group-CamundaPlatform__FormData"] .bio-properties-panel-add-entry').click();
    await unfoldGroups(h.page);
    await fillEntry(h.page, 'work-formField-0-formFieldID', 'approved');
    await fillEntry(h.page, 'work-formField-0-formFieldLabel', 'Approved');
    await entry(h.page, 'work-formField-0-formFieldType').selectOption('boolean');
    const xml = await savedXml(
      id,
      'camunda:candidateGroups="sales, managers"',
      'camunda:dueDate="P2D"',
      'camunda:priority="80"',
      'id="approved"',
    );
    expect(xml).toMatch(/<camunda:formField id="approved" label="Approved" type="boolean"/);

    await h.page.getByRole('button', { name: 'Deploy' }).click();
    await h.page.locator('.deploy-result').getByText('Deployed').waitFor();
    const { body } = await h.t.api.get('/api/definitions/e2e-review');
    const wait = body.plan.steps.find((s: { id: string }) => s.id === 'work')?.wait;
    expect(wait).toMatchObject({
      trigger: 'user',
      userTask: {
        candidateGroups: { text: 'sales, managers' },
        dueDate: { text: 'P2D' },
        priority: { text: '80' },
        formFields: [expect.objectContaining({ id: 'approved', type: 'boolean', label: 'Approved' })],
      },
    });
    expect(h.consoleErrors).toEqual([]);
  });
});
