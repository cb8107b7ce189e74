// DBOS Transact under the bench, used as its documentation shows: workflows and
// steps registered in this process (registerWorkflow / runStep), WORKERS callers
// each running one workflow after another; the system database is this system's
// database. Workflows: one step (workload 1), three sequential steps (2), ten steps
// run together and awaited (3). No pickup figure: a workflow call starts in-process.
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import {
  FANOUT_BRANCHES,
  WORKERS,
  benchRounds,
  check,
  roundsInDatabase,
  costMark,
  costSince,
  env,
  idleQueriesPerSec,
  partial,
  pool,
  quickMode,
  report,
  sizes,
  packageVersion,
  type SystemResult,
  type ThroughputRound,
} from './common.ts';

const size = sizes(quickMode());
const version = packageVersion('@dbos-inc/dbos-sdk');

/** Step executions per key "<workflow>/<i>/<step>": a repeat is a correctness failure. */
const executions = new Map<string, number>();
const work = async (key: string): Promise<void> => {
  executions.set(key, (executions.get(key) ?? 0) + 1);
};

const oneStep = DBOS.registerWorkflow(
  async (i: number) => {
    await DBOS.runStep(() => work(`one/${i}/1`), { name: 'step1' });
  },
  { name: 'oneStep' },
);
const threeSteps = DBOS.registerWorkflow(
  async (i: number) => {
    await DBOS.runStep(() => work(`three/${i}/1`), { name: 'step1' });
    await DBOS.runStep(() => work(`three/${i}/2`), { name: 'step2' });
    await DBOS.runStep(() => work(`three/${i}/3`), { name: 'step3' });
  },
  { name: 'threeSteps' },
);
const fanOut = DBOS.registerWorkflow(
  async (i: number) => {
    await Promise.all(
      Array.from({ length: FANOUT_BRANCHES }, (_, b) => DBOS.runStep(() => work(`fan/${i}/${b}`), { name: `branch${b}` })),
    );
  },
  { name: 'fanOut' },
);

/** Workflow arguments (the step keys) stay distinct across rounds and across the children that run them. */
let offset = 0;
async function throughput(
  admin: pg.Client,
  workflow: (i: number) => Promise<void>,
  n: number,
  steps: number,
): Promise<ThroughputRound> {
  const base = offset;
  offset += n;
  const mark = await costMark(admin);
  const t0 = performance.now();
  await pool(n, WORKERS, async (i) => {
    await workflow(base + i);
  });
  const seconds = (performance.now() - t0) / 1000;
  return { perSec: n / seconds, stepsPerSec: (n * steps) / seconds, seconds, cost: await costSince(admin, mark, n * steps) };
}

async function main(): Promise<void> {
  const systemDatabaseUrl = env('BENCH_DB_URL');
  const admin = new pg.Client({ connectionString: env('BENCH_ADMIN_URL') });
  await admin.connect();
  const result: SystemResult = {
    system: 'DBOS',
    version,
    settings: `in-process workflows, ${WORKERS} concurrent callers; system database pool default; steps do no work`,
    single: [],
    chain: [],
    fanout: [],
    checks: [],
    notes: ["pickup: not applicable (a workflow call runs in the caller's process)"],
  };
  const rounds = benchRounds();
  DBOS.setConfig({ name: 'baton-bench', systemDatabaseUrl, logLevel: 'error' });
  await DBOS.launch();
  try {
    if (rounds.includes(0)) result.idleQueriesPerSec = await idleQueriesPerSec();
    for (const round of rounds) {
      offset = round * (size.single + size.chain + size.fanout);
      result.single!.push(await throughput(admin, oneStep, size.single, 1));
      partial(result);
      result.chain!.push(await throughput(admin, threeSteps, size.chain, 3));
      partial(result);
      result.fanout!.push(await throughput(admin, fanOut, size.fanout, FANOUT_BRANCHES));
      partial(result);
    }
  } finally {
    await DBOS.shutdown();
  }
  // the steps this process ran; the workflows of every round so far are in the database
  const expected = rounds.length * (size.single + size.chain * 3 + size.fanout * FANOUT_BRANCHES);
  const repeated = [...executions.values()].filter((n) => n > 1).length;
  check(
    result,
    `${expected} steps ran once each`,
    executions.size === expected && repeated === 0,
    `${executions.size} distinct, ${repeated} repeated`,
  );
  const db = new pg.Client({ connectionString: systemDatabaseUrl });
  await db.connect();
  const { rows } = await db.query<{ status: string; n: number }>(
    'select status, count(*)::int as n from dbos.workflow_status group by status',
  );
  await db.end();
  const workflows = roundsInDatabase(rounds) * (size.single + size.chain + size.fanout);
  check(
    result,
    `${workflows} workflows SUCCESS`,
    rows.length === 1 && rows[0]!.status === 'SUCCESS' && rows[0]!.n === workflows,
    JSON.stringify(rows),
  );
  await admin.end();
  report(result);
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
