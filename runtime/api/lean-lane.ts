// The starters' and workers' routes, native and Camunda's external-task calls, served
// straight from node:http, in front of express.
//
// Why: issue 8. Express and its parts (the router's layers, body-parser and the small
// modules around it, res.json's header handling) cost about a fifth of Node's CPU per
// request in the one-task round: about as much as the store and the engine together
// (docs/PERFORMANCE.md, "Session 25"). The lane serves only requests whose every part is
// plain (POST, the exact path and no query, a JSON body of a known length within the limit,
// no content encoding) and hands everything else to express, so an unusual request gets
// express's answer. What a served request goes through is what express's layers do, in their
// order, with the same functions: the drain guard, the authorizer, the body's parse and its
// checks, the limits, the route, the error table (Camunda's under /engine-rest).
import type { IncomingMessage, ServerResponse } from 'node:http';
import bytes from 'bytes';
import type { Logger } from 'pino';
import type { Engine } from '../engine/context.ts';
import type { ProgressCoalescer } from '../engine/progress.ts';
import type { ParkedPolls } from '../engine/parked-polls.ts';
import type { Drain } from '../ops/shutdown.ts';
import { AUTH_UNAVAILABLE, type Authorizer } from '../security/auth.ts';
import { mergedVariablesRefusal, parsedBodyError, writeLimitRefusal, type LimitOptions } from '../security/limits.ts';
import { abortedByHangUp, refusalAnswer, sendAnswer, type JsonAnswer } from './answer.ts';
import { camundaErrorAnswer } from '../camunda/api/errors.ts';
import { CAMUNDA_TASK_CALL_ROUTES, camundaFetchRoute } from '../camunda/api/external-task-routes.ts';
import { errorAnswer } from './errors.ts';
import { startRoute } from './instances-routes.ts';
import { progressRoute } from './progress-routes.ts';
import { completeBatchRoute, fetchRoute, TASK_CALL_ROUTES } from './tasks-routes.ts';

export interface LeanLaneDeps {
  engine: Engine;
  parkedPolls: ParkedPolls;
  progress: ProgressCoalescer;
  authorize: Authorizer;
  limits: LimitOptions;
  drain: Drain;
  log: Logger;
}

type LeanRoute = (body: unknown, res: ServerResponse, id?: string) => Promise<JsonAnswer | undefined>;

/** What differs between the native API and the Camunda one in express's layers in front of their routes. */
interface Mount {
  /** the mount path: the limits see the path below it, as express's do */
  prefix: string;
  /** the body limit of the mount's JSON parser */
  jsonLimit: number;
  /** the mount's error table */
  errorAnswer: (err: unknown, log: Logger, method: string, path: string) => JsonAnswer;
  /** a native result may not grow its instance's variables past the limit (only /api checks it) */
  checksMergedVariables: boolean;
}

interface Served {
  route: LeanRoute;
  mount: Mount;
  id?: string;
}

/**
 * A lock holder's call on one task, native and Camunda; its id is checked by the route (a
 * non-uuid is a 404 there). An id with a percent-escape is left to express, which decodes it.
 */
const TASK_CALL = /^\/api\/external-tasks\/([^/?%]+)\/(complete|failure|bpmn-error|extend-lock|unlock|progress)$/;
const CAMUNDA_TASK_CALL = /^\/engine-rest\/external-task\/([^/?%]+)\/(complete|failure|bpmnError|extendLock|lock|unlock)$/;
/** What body-parser's JSON parser reads without a conversion: no charset, or UTF-8. */
const PLAIN_JSON = /^application\/json\s*(?:;\s*charset="?utf-8"?\s*)?$/i;
const DIGITS = /^\d+$/;

/**
 * The lane: a request handler that answers the hot routes and returns true, or returns false
 * without touching the request, which then goes to express.
 */
export function leanLane(deps: LeanLaneDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { engine, parkedPolls } = deps;
  const api: Mount = {
    prefix: '/api',
    jsonLimit: bytes.parse(deps.limits.jsonLimit) ?? 0,
    errorAnswer,
    checksMergedVariables: true,
  };
  const camunda: Mount = {
    prefix: '/engine-rest',
    jsonLimit: bytes.parse(deps.limits.camundaJsonLimit) ?? 0,
    errorAnswer: camundaErrorAnswer,
    checksMergedVariables: false,
  };
  const routes = new Map<string, Served>([
    ['/api/instances', { mount: api, route: (body) => startRoute(engine, body) }],
    [
      '/api/external-tasks/fetch-and-lock',
      { mount: api, route: (body, res) => fetchRoute(engine, parkedPolls, body, abortedByHangUp(res)) },
    ],
    ['/api/external-tasks/complete-batch', { mount: api, route: (body) => completeBatchRoute(engine, body) }],
    [
      '/engine-rest/external-task/fetchAndLock',
      { mount: camunda, route: (body, res) => camundaFetchRoute(engine, parkedPolls, body, abortedByHangUp(res)) },
    ],
  ]);
  const taskCalls = new Map<string, LeanRoute>(
    Object.entries(TASK_CALL_ROUTES).map(([call, route]) => [call, (body, _res, id) => route(engine, id, body)]),
  );
  taskCalls.set('progress', (body, _res, id) => progressRoute(deps.progress, id, body));
  const camundaTaskCalls = new Map<string, LeanRoute>(
    Object.entries(CAMUNDA_TASK_CALL_ROUTES).map(([call, route]) => [call, (body, _res, id) => route(engine, id, body)]),
  );

  const servedAt = (url: string): Served | undefined => {
    const fixed = routes.get(url);
    if (fixed) return fixed;
    const native = TASK_CALL.exec(url);
    if (native) return { mount: api, route: taskCalls.get(native[2]!)!, id: native[1]! };
    const call = CAMUNDA_TASK_CALL.exec(url);
    return call ? { mount: camunda, route: camundaTaskCalls.get(call[2]!)!, id: call[1]! } : undefined;
  };

  return (req, res) => {
    if (req.method !== 'POST') return false;
    const url = req.url ?? '';
    const served = servedAt(url);
    if (!served) return false;
    const length = plainJsonLength(req, served.mount.jsonLimit);
    if (length === undefined) return false;
    serve(deps, req, res, url, length, served).catch((err: unknown) => {
      // Only a failure to write an answer gets here; the socket is of no more use.
      deps.log.error({ err, method: req.method, path: url }, 'api:error');
      res.destroy();
    });
    return true;
  };
}

/** The body's length when the request is one body-parser would read as it is; undefined for any other. */
function plainJsonLength(req: IncomingMessage, limit: number): number | undefined {
  const { headers } = req;
  if (headers['content-encoding'] !== undefined || headers['transfer-encoding'] !== undefined) return undefined;
  if (!PLAIN_JSON.test(headers['content-type'] ?? '')) return undefined;
  const declared = headers['content-length'] ?? '';
  if (!DIGITS.test(declared)) return undefined;
  const length = Number(declared);
  return length > 0 && length <= limit ? length : undefined;
}

async function serve(
  deps: LeanLaneDeps,
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
  length: number,
  { route, mount, id }: Served,
): Promise<void> {
  if (deps.drain.draining) return sendAnswer(res, deps.drain.answer);
  const client = req.socket.remoteAddress ?? 'unknown';
  let verdict;
  try {
    verdict = await deps.authorize({ method: 'POST', path: url, authorization: req.headers.authorization, client });
  } catch (err) {
    deps.log.error({ err: (err as Error).message, method: 'POST', path: url }, 'auth:unavailable');
    verdict = AUTH_UNAVAILABLE;
  }
  if (!verdict.pass) return sendAnswer(res, refusalAnswer(verdict));
  const raw = await readBody(req, length);
  if (raw === undefined) return; // the caller hung up mid-body: nobody to answer
  try {
    const body = parseJson(raw);
    const shapeError = parsedBodyError(raw, body, deps.limits.maxJsonDepth);
    if (shapeError) throw shapeError;
    const write = { path: url.slice(mount.prefix.length), originalUrl: url, body };
    const refused =
      writeLimitRefusal(deps.limits, deps.parkedPolls, write) ??
      (mount.checksMergedVariables ? await mergedVariablesRefusal(deps.limits, deps.engine.pool, write) : undefined);
    if (refused) return sendAnswer(res, refusalAnswer(refused));
    const answer = await route(body, res, id);
    if (answer) sendAnswer(res, answer);
  } catch (err) {
    sendAnswer(res, mount.errorAnswer(err, deps.log, 'POST', url));
  }
}

/** The body, or undefined when the request ends early (node:http has already checked the length). */
function readBody(req: IncomingMessage, length: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
    });
    req.once('end', () =>
      resolve(received === length ? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)) : undefined),
    );
    req.once('aborted', () => resolve(undefined));
    req.once('error', () => resolve(undefined));
  });
}

/**
 * JSON.parse as body-parser's strict parser does it: an empty body is {}, a leading byte-order
 * mark is dropped, and the text must open an object or an array. Its errors carry body-parser's
 * type, so the error table answers them alike.
 */
export function parseJson(raw: Buffer): unknown {
  let text = raw.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  const first = /\S/.exec(text);
  if (first && first[0] !== '{' && first[0] !== '[') throw strictViolation(text, first.index);
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw Object.assign(err as Error, { type: 'entity.parse.failed', status: 400 });
  }
}

/**
 * A top-level value that is neither an object nor an array, reported as JSON.parse reports an
 * unexpected token: the text is parsed with everything from that value on hidden behind '#',
 * and each '#' run in the message is given back the characters it hid, as body-parser does.
 */
function strictViolation(text: string, at: number): Error {
  let message = 'Unexpected token';
  try {
    JSON.parse(text.slice(0, at) + '#'.repeat(text.length - at));
  } catch (err) {
    message = (err as Error).message.replace(/#+/g, (run) => text.slice(at, at + run.length));
  }
  return Object.assign(new SyntaxError(message), { type: 'entity.parse.failed', status: 400 });
}
