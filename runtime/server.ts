// Wires store, engine, sweeper and API into one HTTP server.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Server as SocketServer } from 'socket.io';
import type { Logger } from 'pino';
import { CAMUNDA_KEEP_ALIVE_TIMEOUT_MS, camundaRouter } from './camunda/api/index.ts';
import { definitionsRouter } from './api/definitions-routes.ts';
import { designerApiRouter, designerStatic } from './api/designer-routes.ts';
import { userTasksRouter } from './api/user-tasks-routes.ts';
import { elementTemplatesRouter } from './api/element-templates-routes.ts';
import { errorMiddleware, notFoundRoute } from './api/errors.ts';
import { flowLimitsRouter } from './api/flow-limits-routes.ts';
import { batchesRouter } from './api/batches-routes.ts';
import { incidentsRouter } from './api/incidents-routes.ts';
import { instancesRouter } from './api/instances-routes.ts';
import { progressRouter } from './api/progress-routes.ts';
import { tasksRouter } from './api/tasks-routes.ts';
import { topicsRouter } from './api/topics-routes.ts';
import { createEngine, type Engine, type EngineOptions } from './engine/context.ts';
import { SAFETY_RECHECK_MS } from './engine/fetch.ts';
import { ParkedPolls } from './engine/parked-polls.ts';
import { ProgressCoalescer } from './engine/progress.ts';
import { FrameHub } from './stream/frame-hub.ts';
import { attachProgressStream, type ProgressStreamOptions } from './stream/progress-namespace.ts';
import { socketAuthorizer } from './stream/socket-auth.ts';
import { attachUserTaskFeed } from './stream/user-task-feed.ts';
import { watchUserTaskChanges } from './store/user-tasks.ts';
import { meRouter } from './api/me-routes.ts';
import { startBatchRunner, type BatchRunnerOptions } from './scheduler/batch-runner.ts';
import { startSweeper, type Sweeper } from './scheduler/sweeper.ts';
import { exhaustExpiredLease } from './engine/tasks.ts';
import { startTimerScheduler, type TimerScheduler } from './scheduler/timer-scheduler.ts';
import { startCallReturns } from './engine/call-returns.ts';
import { startSignalBroadcasts } from './engine/signal-broadcasts.ts';
import { eventsRouter } from './api/events-routes.ts';
import { createPool } from './store/db.ts';
import { flushNotifications } from './store/notifications.ts';
import { applyMigrations } from './store/migrate.ts';
import { watchTokenChanges } from './store/token-changes.ts';
import {
  checkAuthBeforeListening,
  createAuthorizer,
  DEFAULT_LIMITS,
  designerHeaders,
  isLoopbackHost,
  securityLayer,
  type AuthOptions,
  type LimitOptions,
} from './security/index.ts';
import { opsRouter, startRetention, type RetentionOptions } from './ops/index.ts';
import { closeHttp, createDrain, DEFAULT_SHUTDOWN_GRACE_MS, trackSockets } from './ops/shutdown.ts';

export interface BatonServerOptions {
  databaseUrl: string;
  port: number;
  host: string;
  log: Logger;
  sweepIntervalMs?: number;
  /** how often call returns and thrown signals other nodes left are looked for (ms) */
  callReturnIntervalMs?: number;
  engine?: Partial<EngineOptions>;
  /** JSON body limit */
  jsonLimit?: string;
  /** BPMN XML body limit */
  xmlLimit?: string;
  /** runs after migrations and before the port opens (deploying samples), so a healthy server is a ready one */
  prepare?: (engine: Engine) => Promise<void>;
  /** tokens from the environment (the tokens table is always honoured); see docs/security.md */
  auth?: AuthOptions;
  /** variables size, parked long polls, Camunda JSON limit (jsonLimit above is the /api one) */
  limits?: Partial<LimitOptions>;
  /** deletion of old ended instances; off unless days > 0 */
  retention?: RetentionOptions;
  /** frames of ended instances are deleted after this (default 24 h; BATON_FRAME_RETENTION_MS) */
  frameRetentionMs?: number;
  /** Socket.IO /progress: read batch size, per-client backlog cap, subscriptions per connection */
  progressStream?: Partial<ProgressStreamOptions>;
  /** close(): open sockets are cut after half of it (BATON_SHUTDOWN_GRACE_MS) */
  shutdownGraceMs?: number;
  /** batch runner: chunk size, lease and polling (BATON_BATCH_*) */
  batches?: Partial<BatchRunnerOptions>;
}

export interface BatonServer {
  engine: Engine;
  parkedPolls: ParkedPolls;
  http: Server;
  sweeper: Sweeper;
  timers: TimerScheduler;
  /** Socket.IO server (namespace /progress) */
  io: SocketServer;
  url: string;
  close(): Promise<void>;
}

export async function startBatonServer(opts: BatonServerOptions): Promise<BatonServer> {
  const pool = createPool({ connectionString: opts.databaseUrl });
  await applyMigrations(pool);
  await checkAuthBeforeListening(pool, opts.host, opts.auth).catch(async (err: Error) => {
    await pool.end();
    throw err;
  });
  const limits: LimitOptions = {
    ...DEFAULT_LIMITS,
    jsonLimit: opts.jsonLimit ?? '1mb',
    xmlLimit: opts.xmlLimit ?? '5mb',
    ...opts.limits,
  };
  // The engine checks a result's variables against the limit with the variables its transition reads.
  const engine = createEngine(pool, opts.log, { ...opts.engine, maxVariablesBytes: limits.maxVariablesBytes });
  await opts.prepare?.(engine);
  const parkedPolls = new ParkedPolls(opts.databaseUrl, opts.log);
  await parkedPolls.start();
  engine.delivery = parkedPolls;
  const frameHub = new FrameHub(opts.databaseUrl, opts.log);
  await frameHub.start();
  const progress = new ProgressCoalescer(pool, opts.log);
  const sweeper = startSweeper(pool, opts.log, {
    intervalMs: opts.sweepIntervalMs ?? 1000,
    batchSize: 500,
    frameRetentionMs: opts.frameRetentionMs ?? 24 * 3_600_000,
    leaseExpiryAllowance: engine.options.leaseExpiryAllowance,
    exhaustLease: (taskId) => exhaustExpiredLease(engine, taskId),
  });
  // Sleeps no longer than a poll waits between re-checks: a notification lost with a node that died before relaying it costs at most that.
  const timers = startTimerScheduler(engine, opts.log, { maxSleepMs: SAFETY_RECHECK_MS, batchSize: 500 });
  parkedPolls.onTimerCreated(() => timers.poke());
  // A node delivers the returns its own commits wrote at once; the re-check finds those a node that died left behind.
  const callReturns = startCallReturns(engine, opts.log, { intervalMs: opts.callReturnIntervalMs ?? 1000, lanes: 4 });
  // Thrown signals the same way: at once for this node's throws, the re-check for a dead node's.
  const signals = startSignalBroadcasts(engine, opts.log, { intervalMs: opts.callReturnIntervalMs ?? 1000, lanes: 1 });
  const retention = startRetention(pool, opts.log, opts.retention ?? { days: 0, intervalMs: 3_600_000 });
  const batches = startBatchRunner(engine, opts.log, { intervalMs: 1000, chunkSize: 50, leaseMs: 30_000, ...opts.batches });

  const app = express();
  app.disable('x-powered-by');
  // No ETag on API answers: nothing sends If-None-Match, and hashing every body costs CPU
  // on each task call (the designer's static files keep theirs, from serve-static).
  app.set('etag', false);
  const drain = createDrain();
  app.use(drain.guard);
  const tokenChanges = await watchTokenChanges(opts.databaseUrl, opts.log);
  // Open while no token exists only where nobody else can reach it (docs/security.md, "Open mode").
  const openWithoutTokens = isLoopbackHost(opts.host);
  const authorize = createAuthorizer(pool, opts.log, { ...opts.auth, changes: tokenChanges, openWithoutTokens });
  // Reads the body of every /api and /engine-rest request, once, with that API's limit.
  app.use(securityLayer({ authorize, log: opts.log, parkedPolls, limits }));
  // The workers' and starters' routes first: a request walks every layer mounted before its own.
  app.use('/api/instances', instancesRouter(engine));
  app.use('/api/external-tasks', tasksRouter(engine, parkedPolls), progressRouter(progress));
  app.use(
    '/engine-rest',
    camundaRouter(engine, parkedPolls, progress, opts.auth?.groups, () => batches.poke()),
  );
  app.get('/healthz', async (_req, res) => {
    try {
      await pool.query('select 1');
      res.json({ status: 'ok' });
    } catch (err) {
      res.status(503).json({ type: 'Unavailable', message: `The database does not answer: ${(err as Error).message}` });
    }
  });
  app.use(opsRouter(pool, parkedPolls));
  app.use('/api/definitions', definitionsRouter(engine));
  app.use('/api/incidents', incidentsRouter(engine));
  app.use(
    '/api/batches',
    batchesRouter(engine, () => batches.poke()),
  );
  app.use('/api/me', meRouter());
  app.use('/api/user-tasks', userTasksRouter(engine));
  app.use('/api/flow-limits', flowLimitsRouter(engine));
  app.use('/api/element-templates', elementTemplatesRouter(engine));
  app.use('/api/topics', topicsRouter(engine));
  app.use('/api', eventsRouter(engine));
  app.use('/api', designerApiRouter(engine));
  app.use(designerHeaders(), designerStatic());
  app.use(notFoundRoute);
  app.use(errorMiddleware(opts.log));

  const http = createServer(app);
  const sockets = trackSockets(http);
  http.keepAliveTimeout = CAMUNDA_KEEP_ALIVE_TIMEOUT_MS;
  // Same origin only (no cors option); the designer is served by this server.
  const io = new SocketServer(http, { serveClient: false });
  attachProgressStream(io, {
    pool,
    hub: frameHub,
    log: opts.log,
    authorize: socketAuthorizer(pool, opts.log, opts.auth?.tokens, openWithoutTokens),
    ...(opts.progressStream ? { options: opts.progressStream } : {}),
  });
  const userTaskChanges = await watchUserTaskChanges(opts.databaseUrl, opts.log);
  attachUserTaskFeed(io, {
    changes: userTaskChanges,
    log: opts.log,
    authorize: socketAuthorizer(pool, opts.log, opts.auth?.tokens, openWithoutTokens, '/tasks'),
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  const url = `http://${opts.host}:${port}`;

  return {
    engine,
    parkedPolls,
    http,
    sweeper,
    timers,
    io,
    url,
    async close() {
      drain.begin(); // new requests: 503 ShuttingDown
      await parkedPolls.stop(); // wakes parked long polls, which then answer []
      io.disconnectSockets(true); // progress clients reconnect to another node and resume from their last seq
      io.engine.close();
      // Requests in flight finish; the background loops finish their current transaction.
      await Promise.all([
        closeHttp(http, sockets, (opts.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS) / 2),
        sweeper.stop(),
        timers.stop(),
        callReturns.stop(),
        signals.stop(),
        retention.stop(),
        batches.stop(),
      ]);
      await Promise.all([
        frameHub.stop(),
        progress.close(),
        tokenChanges.stop(),
        userTaskChanges.stop(),
        engine.fetchActivity.close(),
      ]);
      await flushNotifications(pool); // the other nodes hear the last commits' notifications
      await pool.end(); // waits for clients still checked out
    },
  };
}
