// Headless Debian Chromium through playwright-core, against a real Baton server that
// serves the built designer. A missing browser fails the tests with a clear message.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ensureDesignerBuilt } from '../../../designer/scripts/ensure-built.ts';
import { startTestServer, type TestServer, type TestServerOptions } from '../../support/server.ts';

export const CHROMIUM_PATH = process.env.BATON_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = path.resolve('test-output/e2e');

export interface BrowserHarness {
  t: TestServer;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** console errors and page errors seen so far (the designer must have none) */
  consoleErrors: string[];
  screenshot(name: string): Promise<string>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Browser tests need Chromium at ${CHROMIUM_PATH}: install it with \`apt-get update && apt-get install -y chromium\` (.ci/run does), or set BATON_CHROMIUM`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
}

/** serverOptions: tokens for the auth tests; the harness's `t.api` then sends serverOptions.token. */
export async function openDesigner(serverOptions: TestServerOptions = {}): Promise<BrowserHarness> {
  await ensureDesignerBuilt();
  const [t, browser] = await Promise.all([startTestServer(serverOptions), launchBrowser()]);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  const page = await context.newPage();
  // Shorter than the test timeout, so a stuck step names its locator.
  page.setDefaultTimeout(15_000);
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  // Dialogs (confirm before delete / cancel) are accepted as a user would.
  page.on('dialog', (d) => void d.accept());
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  return {
    t,
    browser,
    context,
    page,
    consoleErrors,
    async screenshot(name) {
      const file = path.join(SCREENSHOT_DIR, `${name}.png`);
      await page.screenshot({ path: file });
      return file;
    },
    async close() {
      await browser.close();
      await t.close();
    },
  };
}
