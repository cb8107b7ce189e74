// What a new analyst hit in a first hour, each checked in headless Chromium:
// - the heatmap counts the instances that ran an element (skips apart); the instance view marks the flows taken;
// - instance ids show the part that differs;
// - a sequence flow's lint badge sits on the flow;
// - fit-to-view keeps the diagram clear of the palette and the minimap button;
// - a file that is not BPMN is refused before a draft exists.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchTasks, start } from '../support/flows.ts';
import { waitFor } from '../support/server.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

const fixture = (name: string) => path.resolve('test/e2e/fixtures', name);

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const shape = (id: string, marker = '') => h.page.locator(`g.djs-element${marker}[data-element-id="${id}"]`);

async function diagramCount(): Promise<number> {
  return ((await h.t.api.get('/api/diagrams')).body.items as unknown[]).length;
}

/** Completes every task of the topics until the instances have ended. */
async function completeAll(topics: string[], instanceIds: string[]): Promise<void> {
  await waitFor(
    async () => {
      for (const task of await fetchTasks(h.t.api, 'analyst-worker', topics)) {
        expect((await complete(h.t.api, task, 'analyst-worker')).status).toBe(204);
      }
      const statuses = await Promise.all(instanceIds.map(async (id) => (await h.t.api.get(`/api/instances/${id}`)).body.status));
      return statuses.every((s) => s === 'completed') ? true : undefined;
    },
    15_000,
    'every instance to complete',
  );
}

describe('heatmap and instance view of an exclusive gateway', () => {
  const ids: Record<'cheap' | 'dear', string[]> = { cheap: [], dear: [] };

  beforeAll(async () => {
    await deploy(h.t.api, await readFile(fixture('expense-approval.bpmn'), 'utf8'));
    for (const [kind, amount] of [
      ['cheap', 50],
      ['cheap', 80],
      ['dear', 500],
      ['dear', 900],
    ] as const) {
      ids[kind].push(await start(h.t.api, 'expense-approval', { variables: { amount } }));
    }
    await completeAll(['expense-pay', 'expense-notify'], [...ids.cheap, ...ids.dear]);
  });

  it('given two runs down each branch, when the definition view opens, then each element counts the instances that ran it and skips show apart', async () => {
    await h.page.goto(`${h.t.url}/#/definitions/expense-approval`);
    const heat = (id: string) => h.page.locator(`.baton-heat-badge[data-element-id="${id}"]`).textContent();
    await h.page.locator('.baton-heat-badge[data-element-id="pay"]').waitFor();
    const counts = Object.fromEntries(
      await Promise.all(['start', 'gw', 'pay', 'notify', 'paid', 'rejected'].map(async (id) => [id, await heat(id)])),
    );
    expect(counts).toEqual({ start: '4', gw: '4', pay: '2', notify: '2', paid: '2', rejected: '2' });
    const skipped = h.page.locator('.baton-heat-skipped');
    expect(
      Object.fromEntries(
        await Promise.all(
          (await skipped.all()).map(async (b) => [await b.getAttribute('data-element-id'), await b.textContent()]),
        ),
      ),
    ).toEqual({ pay: '2 skipped', notify: '2 skipped', paid: '2 skipped', rejected: '2 skipped' });
    // The busiest elements are shaded darkest; a branch taken half the time is lighter.
    await shape('start', '.baton-heat-5').waitFor();
    await shape('pay', '.baton-heat-3').waitFor();
    await h.screenshot('analyst-01-heatmap');
    expect(h.consoleErrors).toEqual([]);
  });

  it('given an instance that took the "yes" branch, when its view opens, then the flows it took are marked and the others show as skipped', async () => {
    await h.page.goto(`${h.t.url}/#/instances/${ids.cheap[0]}`);
    // A straight flow's group has no height, which playwright counts as hidden: wait for it in the DOM.
    const flow = (id: string, marker: string) =>
      h.page.locator(`g.djs-connection.${marker}[data-element-id="${id}"]`).waitFor({ state: 'attached' });
    for (const id of ['f_start', 'yes', 'f_paid']) await flow(id, 'baton-flow-taken');
    for (const id of ['no', 'f_rejected']) await flow(id, 'baton-flow-skipped');
    expect(await h.page.locator('g.djs-connection.baton-flow-taken').count()).toBe(3);
    await h.page.locator('.legend-taken').waitFor();
    await h.screenshot('analyst-02-taken-flows');
    expect(h.consoleErrors).toEqual([]);
  });
});

describe('instance ids', () => {
  it('given two instances started one after the other, then the list, the instance view and the start form show the part of the id that differs', async () => {
    await deploy(h.t.api, await readFile(fixture('long-process.bpmn'), 'utf8'));
    const first = await start(h.t.api, 'long-process');
    const second = await start(h.t.api, 'long-process');
    const tail = (id: string) => `…${id.slice(-8)}`;

    await h.page.goto(`${h.t.url}/#/instances?definitionKey=long-process`);
    const shown = (id: string) => h.page.locator(`tr[data-instance-id="${id}"] td:first-child code`);
    await shown(second).waitFor();
    expect([await shown(first).textContent(), await shown(second).textContent()]).toEqual([tail(first), tail(second)]);
    expect(tail(first)).not.toBe(tail(second));
    await expect(shown(first).getAttribute('title')).resolves.toBe(first);

    await shown(first).click();
    await h.page.waitForURL(new RegExp(`#/instances/${first}$`));
    await expect(h.page.locator('.instance-view h1 code').textContent()).resolves.toBe(tail(first));

    await h.page.goto(`${h.t.url}/#/definitions/long-process`);
    await h.page.getByRole('button', { name: 'Start instance' }).click();
    await h.page.locator('.started a').waitFor();
    const { items } = (await h.t.api.get('/api/instances?definitionKey=long-process&limit=1')).body;
    await expect(h.page.locator('.started a').textContent()).resolves.toBe(tail(items[0].id));
    expect(h.consoleErrors).toEqual([]);
  });
});

describe('editor canvas', () => {
  it('given a warning on a bent sequence flow, then its badge sits on the middle of the flow, not on a task nearby', async () => {
    await h.page.goto(h.t.url);
    await h.page.locator('#import-file').setInputFiles(fixture('flow-warning.bpmn'));
    await h.page.waitForURL(/#\/diagrams\/[0-9a-f-]{36}$/);
    const badge = h.page.locator('.baton-lint-badge[data-element-id="f_plain"]');
    await badge.waitFor();
    await h.screenshot('analyst-03-flow-badge');
    // f_plain runs (275,145) → (275,320) → (450,320); bpmn-js puts a flow's label at the
    // middle of its middle segment, here (275, 232.5). Map it to the screen.
    const expected = await h.page
      .locator('g.djs-connection[data-element-id="f_plain"] .djs-visual > path')
      .evaluate((p: SVGGraphicsElement) => {
        const m = p.getScreenCTM()!;
        return { x: m.a * 275 + m.c * 232.5 + m.e, y: m.b * 275 + m.d * 232.5 + m.f };
      });
    const box = (await badge.boundingBox())!;
    const center = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
    expect(Math.hypot(center.x - expected.x, center.y - expected.y)).toBeLessThan(3);
    const task = (await shape('approve').boundingBox())!;
    const overlaps =
      box.x < task.x + task.width && task.x < box.x + box.width && box.y < task.y + task.height && task.y < box.y + box.height;
    expect(overlaps).toBe(false);
  });

  it('given an imported diagram wider than the canvas, when it opens, then it is fitted between the palette and the minimap button, every element in view', async () => {
    await h.page.goto(h.t.url);
    await h.page.locator('#import-file').setInputFiles(fixture('long-process.bpmn'));
    await h.page.waitForURL(/#\/diagrams\/[0-9a-f-]{36}$/);
    await shape('end').waitFor();
    await h.page.locator('.problems-summary.good').waitFor();
    const palette = (await h.page.locator('.djs-palette').boundingBox())!;
    const minimap = (await h.page.locator('.djs-minimap').boundingBox())!;
    const first = (await shape('start').boundingBox())!;
    const last = (await shape('end').boundingBox())!;
    await h.screenshot('analyst-04-fit');
    expect(first.x).toBeGreaterThanOrEqual(palette.x + palette.width);
    expect(last.x + last.width).toBeLessThanOrEqual(minimap.x);
    expect(h.consoleErrors).toEqual([]);
  });
});

describe('import', () => {
  it('given a truncated .bpmn file or a file that is not XML, when imported, then a plain message says why and no draft is created', async () => {
    await h.page.goto(h.t.url);
    await h.page.getByRole('heading', { name: 'Diagrams' }).waitFor();
    const before = await diagramCount();
    const xml = await readFile(fixture('expense-approval.bpmn'), 'utf8');
    const alert = h.page.locator('[role="alert"]');

    await h.page.locator('#import-file').setInputFiles({
      name: 'truncated.bpmn',
      mimeType: 'application/xml',
      buffer: Buffer.from(xml.slice(0, Math.floor(xml.length / 2))),
    });
    await alert.filter({ hasText: 'truncated.bpmn' }).waitFor();
    await expect(alert.textContent()).resolves.toMatch(
      /^truncated\.bpmn could not be imported: The file is not readable BPMN XML: unexpected end of file: the file stops before its elements are closed \(is it cut short\?\)/,
    );

    await h.page.locator('#import-file').setInputFiles({
      name: 'notes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('Expense policy: up to 100 EUR without approval'),
    });
    await alert.filter({ hasText: 'notes.txt' }).waitFor();
    const text = await alert.textContent();
    expect(text).toMatch(
      /^notes\.txt could not be imported: The file is not readable BPMN XML: missing start tag at line 1, column 1: the file does not start with an XML element/,
    );
    expect(text).not.toMatch(/must match|pattern|\/xml/);

    expect(h.page.url()).not.toMatch(/#\/diagrams\/[0-9a-f-]{36}/);
    expect(await diagramCount()).toBe(before);
    // Chromium logs each refused request itself; those two lines are expected, nothing else.
    await waitFor(async () => (h.consoleErrors.length >= 2 ? true : undefined));
    expect(h.consoleErrors.splice(0)).toEqual(
      Array(2).fill('Failed to load resource: the server responded with a status of 400 (Bad Request)'),
    );
  });
});
