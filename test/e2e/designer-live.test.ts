// The instance view's live progress log in headless Chromium: frames over Socket.IO,
// worker progress text appended, markers refreshed by frames, and a network cut
// (context.setOffline) in the middle of a worker's stream: the log shows nothing new
// while offline, then catches up, and ends with every frame of the table exactly once.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/server.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
  // The fixture has diagram layout, so the viewer draws it; its task gets a topic here.
  const xml = (await readFile(path.resolve('test/e2e/fixtures/no-topic.bpmn'), 'utf8'))
    .replace('id="e2e-order"', 'id="streamed"')
    .replace('bpmnElement="e2e-order"', 'bpmnElement="streamed"')
    .replace(
      '<bpmn:serviceTask id="work" name="Charge card">',
      '<bpmn:serviceTask id="work" name="Stream text" camunda:type="external" camunda:topic="stream-task">',
    );
  expect((await h.t.api.post('/api/definitions', { xml })).status).toBe(201);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const logLines = () => h.page.locator('.progress-log li[data-seq]');

async function shownSeqs(): Promise<number[]> {
  return await logLines().evaluateAll((lis) => lis.map((li) => Number(li.getAttribute('data-seq'))));
}

async function shownProgressText(): Promise<string> {
  return (await h.page.locator('.progress-log .progress-text').allTextContents()).join('');
}

describe('live progress log', () => {
  it('given a worker streaming text while the browser goes offline and back, the log has every frame once and the whole text in order', async () => {
    const instanceId: string = (await h.t.api.post('/api/instances', { definitionKey: 'streamed', businessKey: 'stream-1' })).body
      .id;
    const [task] = (
      await h.t.api.post('/api/external-tasks/fetch-and-lock', {
        workerId: 'streamer',
        maxTasks: 1,
        topics: [{ name: 'stream-task', lockDurationMs: 600_000 }],
      })
    ).body;
    const sent: string[] = [];
    const report = async (n: number) => {
      const text = `chunk-${n} `;
      const res = await h.t.api.post(`/api/external-tasks/${task.id}/progress`, {
        workerId: 'streamer',
        lockToken: task.lockToken,
        data: { text },
      });
      expect(res.status).toBe(202);
      sent.push(text);
    };
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

    await h.page.goto(`${h.t.url}/#/instances/${instanceId}`);
    await h.page.locator('.live-state[data-state="live"]').waitFor();
    await h.page.locator('g.djs-element.baton-step-active[data-element-id="work"]').waitFor();
    for (let i = 0; i < 10; i++) await report(i);
    await waitFor(
      async () => ((await shownProgressText()) === sent.join('') ? true : undefined),
      15_000,
      'the first chunks in the log',
    );
    await h.screenshot('live-01-streaming');

    await h.context.setOffline(true);
    await h.page.locator('.live-state[data-state="offline"]').waitFor();
    const shownBeforeCut = (await shownSeqs()).length;
    for (let i = 10; i < 30; i++) {
      await report(i);
      await pause(20); // several task:progress frames, not one coalesced batch
    }
    await pause(500);
    expect((await shownSeqs()).length, 'nothing reaches an offline browser').toBe(shownBeforeCut);
    await h.screenshot('live-02-offline');

    await h.context.setOffline(false);
    await h.page.locator('.live-state[data-state="live"]').waitFor();
    for (let i = 30; i < 40; i++) await report(i);
    expect(
      (await h.t.api.post(`/api/external-tasks/${task.id}/complete`, { workerId: 'streamer', lockToken: task.lockToken })).status,
    ).toBe(204);
    await h.page.locator('.progress-log li[data-kind="instance:ended"]').waitFor();
    await h.page.locator('.status[data-status="completed"]').waitFor();
    await h.page.locator('g.djs-element.baton-step-completed[data-element-id="work"]').waitFor();
    await h.screenshot('live-03-caught-up');

    const { rows } = await h.t.db.pool.query<{ seq: number; kind: string }>(
      'select seq, kind from frames where instance_id = $1 order by seq',
      [instanceId],
    );
    const seqs = await shownSeqs();
    expect(seqs).toEqual(rows.map((r) => r.seq));
    expect(await logLines().evaluateAll((lis) => lis.map((li) => li.getAttribute('data-kind')))).toEqual(rows.map((r) => r.kind));
    expect(rows.filter((r) => r.kind === 'task:progress').length).toBeGreaterThan(3);
    expect(await shownProgressText()).toBe(sent.join(''));
    console.log(
      `live log: ${seqs.length} frames shown once each (${rows.filter((r) => r.kind === 'task:progress').length} task:progress), ${shownBeforeCut} before the cut`,
    );
    // Requests the page sent while the test held it offline (reconnect attempts, a refresh) fail
    // with this and nothing else; any other console error is a defect.
    expect(h.consoleErrors.filter((e) => !e.includes('net::ERR_INTERNET_DISCONNECTED'))).toEqual([]);
  }, 90_000);
});
