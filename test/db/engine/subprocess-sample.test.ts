// samples/shipment.bpmn end to end: deployed on a real server and driven by
// samples/shipment-worker.ts in a child process (message start, subprocess, multi-instance).
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, await readFile('samples/shipment.bpmn', 'utf8'));
});
afterAll(async () => {
  await t.close();
});

describe('shipment sample', () => {
  it('given the start message, then every item is picked (one task each), the box is packed with the shelves in item order, and the parcel ships', async () => {
    const output = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'samples/shipment-worker.ts'], {
        env: { ...process.env, BATON_URL: t.url },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.on('data', (d) => (text += String(d)));
      child.stderr.on('data', (d) => (text += String(d)));
      child.on('exit', (code) => resolve({ code, text }));
    });
    expect(output.code, output.text).toBe(0);
    expect(output.text).toMatch(/message shipment-requested: started /);
    for (const line of ['pick item 0: mug', 'pick item 1: book', 'pick item 2: lamp']) expect(output.text).toContain(line);
    expect(output.text).toContain('pack box with items from shelves ["A1","B7","C3"]');
    expect(output.text.indexOf('pack box')).toBeLessThan(output.text.indexOf('ship parcel'));
    expect(output.text).toMatch(/shipment shipment-\d+ is completed/);
    const { rows } = await t.db.pool.query(
      `select count(*)::int as n from external_tasks where topic = 'pick-item' and state = 'done'`,
    );
    expect(rows[0].n).toBe(3);
  }, 60_000);
});
