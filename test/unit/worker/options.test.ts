import { describe, expect, it } from 'vitest';
import { BpmnError, createWorker } from '../../../runtime/worker/index.ts';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const base = { baseUrl: 'http://127.0.0.1:9', workerId: 'w', log: silent };

describe('createWorker options', () => {
  it.each([
    ['concurrency 0', { concurrency: 0 }, /concurrency/],
    ['fractional concurrency', { concurrency: 1.5 }, /concurrency/],
    ['lockDurationMs below 100', { lockDurationMs: 99 }, /lockDurationMs/],
    ['pollWaitMs above 4 min', { pollWaitMs: 240_001 }, /pollWaitMs/],
    ['callTimeoutMs below 100', { callTimeoutMs: 10 }, /callTimeoutMs/],
    ['empty workerId', { workerId: '' }, /workerId/],
    ['workerId over 255', { workerId: 'x'.repeat(256) }, /workerId/],
  ])('given %s, then createWorker throws naming it', (_name, extra, message) => {
    expect(() => createWorker({ ...base, ...extra })).toThrow(message);
  });

  it('given no subscription, then start() throws and says what to call', () => {
    expect(() => createWorker(base).start()).toThrow(/subscribe/);
  });

  it('given a topic subscribed twice, then the second subscribe throws', () => {
    const w = createWorker(base).subscribe('a', async () => ({}));
    expect(() => w.subscribe('a', async () => ({}))).toThrow(/already/);
  });

  it('given a topic lock duration out of range, then subscribe throws', () => {
    expect(() => createWorker(base).subscribe('a', async () => ({}), { lockDurationMs: 50 })).toThrow(/lockDurationMs/);
  });
});

describe('BpmnError', () => {
  it('given code only, then the message is the code', () => {
    const e = new BpmnError('CARD_DECLINED');
    expect(e).toBeInstanceOf(Error);
    expect(e.message).toBe('CARD_DECLINED');
    expect(e.name).toBe('BpmnError');
  });
});
