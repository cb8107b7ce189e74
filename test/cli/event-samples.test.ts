// The event samples run end to end: samples/*.bpmn deployed on a real server and
// driven by samples/events-worker.ts in a child process.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ sweepIntervalMs: 200 });
  for (const file of ['order-saga', 'approval', 'payment', 'review-loop'])
    await deploy(t.api, await readFile(`samples/${file}.bpmn`, 'utf8'));
});
afterAll(async () => {
  await t.close();
});

function runSample(name: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'samples/events-worker.ts', name], {
      env: { ...process.env, BATON_URL: t.url, SAMPLE_APPROVE_MS: '5600' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += String(d)));
    child.stderr.on('data', (d) => (output += String(d)));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('event samples', () => {
  it('given the saga sample, then shipping fails for good and the card is refunded before the stock is released', async () => {
    const { code, output } = await runSample('saga');
    expect(code, output).toBe(0);
    expect(output).toMatch(/is compensated/);
    expect(output.indexOf('compensate: refund card')).toBeGreaterThan(-1);
    expect(output.indexOf('compensate: refund card')).toBeLessThan(output.indexOf('compensate: release stock'));
  }, 60_000);

  it('given the approval sample, then the reminder timer fires while the approver works and the request completes', async () => {
    const { code, output } = await runSample('approval');
    expect(code, output).toBe(0);
    expect(output).toMatch(/send reminder \(timer fired\)/);
    expect(output).not.toMatch(/escalate/);
    expect(output.indexOf('send reminder')).toBeLessThan(output.indexOf('approve request: done'));
  }, 60_000);

  it('given the payment sample, then the message is matched and the order fulfilled', async () => {
    const { code, output } = await runSample('payment');
    expect(code, output).toBe(0);
    expect(output).toMatch(/message payment-received: (matched|buffered)/);
    expect(output).toMatch(/fulfil order \(message matched\): done \{"fulfilled":120\}/);
  }, 60_000);

  it('given the review sample, then the first draft is revised, the second approved, and the loop ends after two passes', async () => {
    const { code, output } = await runSample('review');
    expect(code, output).toBe(0);
    expect(output.match(/review document: done/g)).toHaveLength(2);
    expect(output.match(/revise document: done \{"revisions":1\}/g)).toHaveLength(1);
    expect(output).toMatch(/is completed/);
  }, 60_000);
});
