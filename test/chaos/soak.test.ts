// The short soak in `npm test`: a minute of chaos (test/chaos/soak.ts) on a fresh
// database of the test server, then the drain, the ledger and the invariant checker.
// `npm run chaos -- --minutes N` runs the same soak for longer.
import { afterAll, describe, expect, it, inject } from 'vitest';
import { killAll } from './harness.ts';
import { formatSummary, runSoak } from './soak.ts';

// runSoak cleans up after itself; these are for a test that times out while it still runs:
// no process left behind, and a database name the global teardown drops (it ends in the run's pid).
afterAll(() => killAll());
const template = inject('templateDb');
const databaseName = `baton_t_${template.slice(template.lastIndexOf('_') + 1)}_soak`;

describe('chaos soak', () => {
  it('given a minute of kills, fault crashes, cut connections and duplicate calls on 2 nodes and 3 workers, then nothing is lost, nothing applied twice and no invariant breaks', async () => {
    const lines: string[] = [];
    const summary = await runSoak({
      minutes: 1,
      nodes: 2,
      workers: 3,
      rate: 5,
      databaseUrl: inject('adminUrl'),
      databaseName,
      drainMs: 90_000,
      log: (line) => lines.push(line),
    });
    const table = `${formatSummary(summary, 'runSoak in test/chaos/soak.test.ts')}\n${lines.join('\n')}`;
    // One table in the test output: what the minute did, pass or fail.
    console.log(table);
    expect(summary.lost, table).toBe(0);
    expect(summary.lostDetails, table).toEqual([]);
    expect(summary.appliedTwice, table).toBe(0);
    expect(summary.violations, table).toBe(0);
    expect(summary.unresponsiveNodes, table).toBe(0);
    // The chaos happened: every kind of kill, the duplicates and late answers, and work got done.
    for (const [kind, n] of Object.entries(summary.kills)) expect(n, `${kind}\n${table}`).toBeGreaterThan(0);
    expect(summary.injected.duplicateCompletes, table).toBeGreaterThan(0);
    expect(summary.injected.lateCompletes, table).toBeGreaterThan(0);
    expect(summary.injected.duplicateMessages, table).toBeGreaterThan(0);
    expect(summary.ledger.shortCircuited, table).toBeGreaterThan(0);
    expect(summary.completed, table).toBeGreaterThan(0);
    expect(summary.compensated, table).toBeGreaterThan(0);
    // Every accepted instance ended, save those waiting for a payment the client gave up sending.
    expect(summary.started, table).toBe(
      summary.completed + summary.compensated + summary.incident + summary.gaveUp.waitingForThem,
    );
  }, 420_000);
});
