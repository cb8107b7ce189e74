// `baton serve | deploy <file.bpmn> | start <definitionKey> [businessKey]`
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import prettyStream from 'pino-pretty';
import { readConfig, type Config } from './config.ts';
import { deployDefinition } from './engine/definitions.ts';
import { startBatonServer, type BatonServer } from './server.ts';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './store/embedded.ts';
import { OPS_USAGE, runOpsCommand } from './ops/commands.ts';
import { callServer, type ServerCall } from './ops/server-calls.ts';
import { readSecuritySettings } from './security/settings.ts';
import { LOG_REDACTION } from './security/redact.ts';
import { within } from './ops/shutdown.ts';
import { configureFeelBudget, startFeelThread } from './shared/feel-budget.ts';
import { configureScriptBudget, startScriptSandbox } from './engine/script-sandbox.ts';

// A person at a terminal reads lines; a log collector reads JSON.
function createLogger(config: Config): pino.Logger {
  const options = { level: config.logLevel, redact: LOG_REDACTION };
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true);
  if (!pretty) return pino(options);
  return pino(options, prettyStream({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true }));
}

async function serve(config: Config): Promise<void> {
  const log = createLogger(config);
  const security = readSecuritySettings();
  configureFeelBudget(security.feel);
  configureScriptBudget({ ...security.script, maxWriteBytes: security.limits.maxVariablesBytes });
  startFeelThread();
  startScriptSandbox();
  let embedded: EmbeddedPostgresHandle | undefined;
  let server: BatonServer | undefined;
  let stopping = false;

  const startUp = async () => {
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    log.info({ designer: `http://${host}:${config.port}/` }, 'server:starting');
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      log.info({ dataDir: config.dataDir, port: config.embeddedPgPort }, 'postgres:starting_embedded');
      embedded = await startEmbeddedPostgres({
        dataDir: config.dataDir,
        port: config.embeddedPgPort,
        database: 'baton',
        sharedDir: config.sharedDir,
        log: (m) => log.debug({ postgres: m.trim() }, 'postgres:log'),
      });
      for (const move of embedded.moves) log.info({ move }, 'postgres:moved');
      databaseUrl = embedded.url;
    }
    if (stopping) return;
    server = await startBatonServer({
      databaseUrl,
      port: config.port,
      host: config.host,
      log,
      sweepIntervalMs: config.sweepIntervalMs,
      engine: {
        retryBackoffMs: config.retryBackoffMs,
        leaseExpiryAllowance: config.leaseExpiryAllowance,
        startLanes: config.startLanes,
      },
      auth: security.auth,
      jsonLimit: security.limits.jsonLimit,
      xmlLimit: security.limits.xmlLimit,
      limits: security.limits,
      retention: { days: security.retentionDays, intervalMs: security.retentionIntervalMs },
      shutdownGraceMs: security.shutdownGraceMs,
      frameRetentionMs: security.frameRetentionMs,
      batches: { chunkSize: config.batchChunkSize, leaseMs: config.batchLeaseMs, intervalMs: config.batchIntervalMs },
      prepare: async (engine) => {
        if (config.samplesDir) await deploySamples(engine, config.samplesDir, log);
      },
    });
    log.info({ designer: `${server.url}/`, url: server.url, embeddedPostgres: Boolean(embedded) }, 'server:listening');
  };

  let starting: Promise<void> = Promise.resolve();
  // The grace period bounds the drain: past it the process exits with code 1 and
  // PostgreSQL rolls back whatever transaction was still open on its connections.
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const graceMs = security.shutdownGraceMs;
    log.info({ signal, graceMs }, 'server:stopping');
    const drained = await within(
      starting
        .catch(() => undefined)
        .then(() => server?.close().catch((err: Error) => log.error({ err: err.message }, 'server:close_failed'))),
      graceMs,
    );
    if (drained === 'late') log.error({ graceMs }, 'server:grace_exceeded');
    await embedded?.stop();
    log.info({ drained }, 'server:stopped');
    process.exit(drained === 'done' ? 0 : 1);
  };
  // Installed before anything starts: a signal during start-up lets start-up reach a safe
  // point, then stops what has started (the embedded PostgreSQL above all). startUp runs
  // synchronously up to its first await, logging postgres:starting_embedded on the way: a
  // supervisor that signals on that line must find the handlers in place already.
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  starting = startUp();
  try {
    await starting;
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
}

async function deploySamples(engine: Parameters<typeof deployDefinition>[0], dir: string, log: pino.Logger): Promise<void> {
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.bpmn')).sort();
  for (const file of files) {
    try {
      const { definition, created } = await deployDefinition(engine, await readFile(path.join(dir, file), 'utf8'));
      log.info({ file, key: definition.key, version: definition.version, created }, 'sample:deployed');
    } catch (err) {
      log.error({ file, err: (err as Error).message }, 'sample:deploy_failed');
    }
  }
}

const USAGE = `usage: baton serve
       baton deploy <file.bpmn>
       baton start <definitionKey> [businessKey] [variablesJson]
${OPS_USAGE}

deploy and start call a running server: BATON_URL (e.g. http://host:8080), else
http://127.0.0.1:$PORT, else http://127.0.0.1:8080; BATON_TOKEN is sent as a Bearer token.`;

/** deploy and start: a call to a running server; the exit code is 1 when it is refused or unreachable. */
async function callApi(call: ServerCall): Promise<void> {
  process.exitCode = await callServer(process.env, call, { out: (l) => console.log(l), err: (l) => console.error(l) });
}

async function main(argv: string[]): Promise<void> {
  const config = readConfig();
  const [command, ...args] = argv;
  if (command === 'serve') return serve(config);
  if (command === 'token' || command === 'export') return void (process.exitCode = await runOpsCommand(config, command, args));
  if (command === 'deploy' && args[0]) {
    const xml = await readFile(args[0], 'utf8');
    return callApi({ method: 'POST', route: '/api/definitions', body: xml, contentType: 'application/xml' });
  }
  if (command === 'start' && args[0]) {
    const body = {
      definitionKey: args[0],
      ...(args[1] ? { businessKey: args[1] } : {}),
      ...(args[2] ? { variables: JSON.parse(args[2]) as unknown } : {}),
    };
    return callApi({ method: 'POST', route: '/api/instances', body: JSON.stringify(body), contentType: 'application/json' });
  }
  if (command === '--help' || command === '-h' || command === 'help') return void console.log(USAGE);
  console.error(USAGE);
  process.exitCode = 2;
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
