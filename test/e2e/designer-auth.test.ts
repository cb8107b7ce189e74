// The designer against a server with tokens, in headless Chromium: a 401 opens the token
// dialog, a wrong token is refused and asked again, the right one is kept in localStorage
// and sent as Bearer on every API call (also after a reload), a viewer token gets the API's
// 403 message, and a cancelled prompt leaves a clear error instead of a blank page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTokens } from '../../runtime/security/tokens.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

const ADMIN = 'designer-admin-0123456789';
const VIEWER = 'designer-viewer-0123456789';

let h: BrowserHarness;
const apiCalls: { url: string; authorization: string | undefined }[] = [];
beforeAll(async () => {
  h = await openDesigner({
    auth: {
      tokens: parseTokens(`admin:ops:${ADMIN},viewer:dash:${VIEWER}`),
      failures: { burst: 1_000_000, perMinute: 1_000_000 },
    },
    token: ADMIN,
  });
  h.page.on('request', (r) => {
    if (new URL(r.url()).pathname.startsWith('/api/')) apiCalls.push({ url: r.url(), authorization: r.headers().authorization });
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const dialog = () => h.page.locator('dialog.token-dialog');

async function enterToken(token: string): Promise<void> {
  await dialog().locator('input[name="token"]').fill(token);
  await dialog().getByRole('button', { name: 'Save' }).click();
}

describe('designer with tokens', () => {
  it('given no token, a 401 opens the dialog; a wrong token is asked again; the right one loads the page and is sent on every call', async () => {
    await h.page.goto(h.t.url);
    await dialog().waitFor({ state: 'visible' });
    await expect(dialog().locator('[role="alert"]').textContent()).resolves.toContain('This route needs a token');
    await h.screenshot('auth-01-token-needed');
    await enterToken('not-a-token-0123456789');
    await dialog().locator('[role="alert"]', { hasText: 'The token is not valid' }).waitFor();
    await enterToken(ADMIN);
    await dialog().waitFor({ state: 'hidden' });
    await h.page.getByRole('button', { name: 'New diagram' }).waitFor();
    await h.page.getByRole('button', { name: /Token set/ }).waitFor();
    expect(await h.page.evaluate(() => localStorage.getItem('baton.token'))).toBe(ADMIN);
    const authorizations = apiCalls.map((c) => c.authorization ?? 'none');
    expect(authorizations[0]).toBe('none');
    expect(authorizations).toContain('Bearer not-a-token-0123456789');
    expect(authorizations.at(-1)).toBe(`Bearer ${ADMIN}`);
    await h.screenshot('auth-02-token-accepted');
  });

  it('given a stored token, after a reload every API call carries it and no dialog opens, writes included', async () => {
    apiCalls.length = 0;
    await h.page.reload();
    await h.page.getByRole('button', { name: 'New diagram' }).click();
    await h.page.locator('.canvas').waitFor();
    await h.page.waitForURL(/#\/diagrams\/.+/);
    expect(await dialog().isVisible()).toBe(false);
    expect(apiCalls.length).toBeGreaterThan(1);
    expect(apiCalls.filter((c) => c.authorization !== `Bearer ${ADMIN}`)).toEqual([]);
    expect((await h.t.api.get('/api/diagrams')).body.items).toHaveLength(1);
  });

  it("given a viewer token, a write shows the API's 403 message and no dialog", async () => {
    await h.page.goto(`${h.t.url}/#/diagrams`);
    await h.page.getByRole('button', { name: /Token set/ }).click();
    await enterToken(VIEWER);
    await h.page.reload();
    await h.page.getByRole('button', { name: 'New diagram' }).click();
    await h.page.locator('[role="alert"]', { hasText: 'The viewer role may not POST /api/diagrams' }).waitFor();
    expect(await dialog().isVisible()).toBe(false);
    await h.screenshot('auth-03-viewer-forbidden');
  });

  it('given the token cleared and the prompt cancelled, the page says a token is needed', async () => {
    await h.page.getByRole('button', { name: /Token set/ }).click();
    await dialog().getByRole('button', { name: 'Clear' }).click();
    expect(await h.page.evaluate(() => localStorage.getItem('baton.token'))).toBeNull();
    await h.page.reload();
    await dialog().waitFor({ state: 'visible' });
    await dialog().getByRole('button', { name: 'Cancel' }).click();
    await h.page.locator('[role="alert"]', { hasText: 'Set a token' }).waitFor();
    await h.page.getByRole('button', { name: 'Set token' }).waitFor();
  });

  it('given calls refused together and one of their 401s late, the late one is sent again with the token given meanwhile, not asked again', async () => {
    const WRONG = 'late-wrong-token-0123456789';
    // Every call with the wrong token but the first is held 1.5 s: its 401 comes back after
    // the right token was entered into the prompt that the first one's 401 opened.
    const held: Promise<void>[] = [];
    let wrong = 0;
    await h.page.route('**/api/**', async (route) => {
      if (route.request().headers().authorization !== `Bearer ${WRONG}` || ++wrong === 1) return route.continue();
      const answered = new Promise<void>((resolve) => setTimeout(resolve, 1500)).then(() => route.continue());
      held.push(answered);
      await answered;
    });
    try {
      apiCalls.length = 0;
      await h.page.reload();
      await dialog().waitFor({ state: 'visible' });
      await enterToken(WRONG);
      await dialog().locator('[role="alert"]', { hasText: 'The token is not valid' }).waitFor();
      expect(held.length).toBeGreaterThan(0); // the page's first calls were refused together
      await enterToken(ADMIN);
      await dialog().waitFor({ state: 'hidden' });
      await Promise.all(held);
      await h.page.getByRole('button', { name: 'New diagram' }).waitFor();
      // every held call, refused with the old token, was sent again with the new one
      await expect
        .poll(() => apiCalls.filter((c) => c.authorization === `Bearer ${ADMIN}`).length)
        .toBeGreaterThanOrEqual(held.length);
      expect(await dialog().isVisible()).toBe(false);
    } finally {
      await h.page.unroute('**/api/**');
    }
  });

  it('given the live stream refused for a token the user has replaced meanwhile, it connects with the new one, not asking again', async () => {
    const WRONG = 'stale-socket-token-0123456789';
    const NS = 'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"';
    await h.t.api.post('/api/definitions', {
      xml: `<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions ${NS} id="D_watch" targetNamespace="t"><bpmn:process id="watched" isExecutable="true"><bpmn:startEvent id="start"/><bpmn:serviceTask id="work" camunda:type="external" camunda:topic="watched"/><bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/></bpmn:process></bpmn:definitions>`,
    });
    const started = await h.t.api.post('/api/instances', { definitionKey: 'watched' });
    // The socket's handshake with the stale token is held 1.5 s: its refusal comes back after
    // the right token went into the prompt that the page's refused API calls opened.
    const held: Promise<void>[] = [];
    await h.page.route('**/socket.io/**', async (route) => {
      if (!(route.request().postData() ?? '').includes(WRONG)) return route.continue();
      const sent = new Promise<void>((resolve) => setTimeout(resolve, 1500)).then(() => route.continue());
      held.push(sent);
      await sent;
    });
    try {
      await h.page.evaluate((token) => localStorage.setItem('baton.token', token), WRONG);
      await h.page.goto(`${h.t.url}/#/instances/${started.body.id}`);
      await h.page.reload();
      await dialog().locator('[role="alert"]', { hasText: 'The token is not valid' }).waitFor();
      await enterToken(ADMIN);
      await dialog().waitFor({ state: 'hidden' });
      await expect.poll(() => held.length).toBeGreaterThan(0);
      await Promise.all(held);
      await h.page.locator('.live-state[data-state="live"]').waitFor();
      expect(await dialog().isVisible()).toBe(false);
    } finally {
      await h.page.unroute('**/socket.io/**');
    }
  });
});
