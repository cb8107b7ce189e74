// Request limits checked before the routers run: JSON body size, variables size, and
// parked long polls per node. Each refusal is JSON naming the limit and its setting.
import type { ServerResponse } from 'node:http';
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import { refusalAnswer, sendAnswer, type Refusal } from '../api/answer.ts';
import { camundaErrorHandler } from '../camunda/api/errors.ts';
import type { ParkedPolls } from '../engine/parked-polls.ts';
import { BatonError } from '../shared/errors.ts';

export interface LimitOptions {
  /** JSON body limit of /api (body-parser syntax: '1mb') */
  jsonLimit: string;
  /** JSON body limit of /engine-rest (File variables travel base64 inside JSON) */
  camundaJsonLimit: string;
  /** body limit of BPMN sent as application/xml */
  xmlLimit: string;
  /** XML elements a deployed or linted BPMN file may hold */
  maxBpmnElements: number;
  /** bytes of JSON one request may carry in its variables fields */
  maxVariablesBytes: number;
  /** long polls one node keeps parked at most */
  maxParkedPolls: number;
  /** levels of arrays and objects a JSON body may nest (the checks and the store walk bodies recursively) */
  maxJsonDepth: number;
}

export const DEFAULT_LIMITS: LimitOptions = {
  jsonLimit: '1mb',
  camundaJsonLimit: '20mb',
  xmlLimit: '5mb',
  maxBpmnElements: 20_000,
  maxVariablesBytes: 1_048_576,
  maxParkedPolls: 1000,
  maxJsonDepth: 64,
};

/** BATON_MAX_JSON_DEPTH can go no higher: deeper values would overflow the stack of the walks below and of PostgreSQL's jsonb parser. */
export const MAX_JSON_DEPTH_CEILING = 1000;

/** Fields that carry process variables, native and Camunda. */
const VARIABLE_FIELDS = ['variables', 'processVariables', 'processVariablesLocal', 'localVariables'];

function variablesBytes(body: unknown): number {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return 0;
  let bytes = 0;
  for (const field of VARIABLE_FIELDS) {
    const value = (body as Record<string, unknown>)[field];
    if (value !== undefined && value !== null) bytes += Buffer.byteLength(JSON.stringify(value));
  }
  return bytes + batchItems(body).reduce<number>((sum, item) => sum + variablesBytes(item), 0);
}

/** The items of a native batch complete ({ tasks: [...] }); none for anything else. */
function batchItems(body: object): unknown[] {
  const tasks = (body as { tasks?: unknown }).tasks;
  return Array.isArray(tasks) ? tasks : [];
}

/** The long-poll wait a fetch asks for, native or Camunda; 0 for anything else. */
function requestedWaitMs(req: WriteRequest): number {
  // The routes take a trailing slash too (express routes are not strict).
  const path = req.path.toLowerCase().replace(/\/+$/, '');
  if (!path.endsWith('/fetch-and-lock') && !path.endsWith('/fetchandlock')) return 0;
  const body = req.body as { waitMs?: unknown; asyncResponseTimeout?: unknown } | undefined;
  const wait = body?.waitMs ?? body?.asyncResponseTimeout;
  return typeof wait === 'number' && wait > 0 ? wait : 0;
}

/** The BPMN text of a deploy or lint, JSON or raw XML; undefined for other requests. */
function bpmnText(req: WriteRequest): string | undefined {
  const body: unknown = req.body;
  if (typeof body === 'string') return body;
  const xml = body && typeof body === 'object' ? (body as { xml?: unknown }).xml : undefined;
  return typeof xml === 'string' && /^\/api\/definitions(\/lint)?\/?$/i.test(req.originalUrl.split('?')[0] ?? '')
    ? xml
    : undefined;
}

/** Start tags, counted without parsing: the compiler never sees a file past the limit. */
function countElements(xml: string): number {
  return xml.match(/<[A-Za-z_]/g)?.length ?? 0;
}

/** res.locals key holding the element limit, for routes that parse their own bodies (Camunda multipart deployments). */
export const BPMN_ELEMENT_LIMIT = 'maxBpmnElements';

export interface LimitRefusal {
  type: 'PayloadTooLarge';
  message: string;
  details: Record<string, unknown>;
}

/** The refusal for a BPMN file past the element limit, or undefined when it fits. */
export function bpmnElementsRefusal(xml: string, max: number, resource?: string): LimitRefusal | undefined {
  const elements = countElements(xml);
  if (elements <= max) return undefined;
  const what = resource === undefined ? 'The BPMN file' : `The BPMN resource ${resource}`;
  return {
    type: 'PayloadTooLarge',
    message: `${what} holds ${elements} XML elements, above the limit of ${max} (BATON_MAX_BPMN_ELEMENTS)`,
    details: { limit: 'maxBpmnElements', max, actual: elements, ...(resource === undefined ? {} : { resource }) },
  };
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000: such input would fail in SQL (a 500), so it is
 * refused here. The body's nesting was bounded when it was parsed (maxJsonDepth).
 */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (!value || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some((v) => holdsNul(v));
  return Object.entries(value).some(([k, v]) => k.includes('\u0000') || holdsNul(v));
}

function decodedHoldsNul(raw: string): boolean {
  try {
    return decodeURIComponent(raw).includes('\u0000');
  } catch {
    return false; // malformed escapes are the routers' business (404)
  }
}

const NUL_IN_URL: Refusal = {
  status: 400,
  type: 'ValidationError',
  message: 'The URL holds a NUL character (%00), which no name, key or id may contain',
  details: { limit: 'noNulCharacters' },
};

function answerRefusal(res: ServerResponse, refusal: Refusal): void {
  sendAnswer(res, refusalAnswer(refusal));
}

/** What the limit checks read of a write: its path below the mount (/api, /engine-rest), its whole URL, its parsed body. */
interface WriteRequest {
  path: string;
  originalUrl: string;
  body: unknown;
}

/** The first limit a parsed write body breaks, or undefined. */
function writeLimitRefusal(opts: LimitOptions, parkedPolls: ParkedPolls, req: WriteRequest): Refusal | undefined {
  if (holdsNul(req.body)) {
    return {
      status: 400,
      type: 'ValidationError',
      message: 'The request body holds a NUL character (\\u0000) in a string or name; PostgreSQL cannot store it',
      details: { limit: 'noNulCharacters' },
    };
  }
  const bytes = variablesBytes(req.body);
  if (bytes > opts.maxVariablesBytes) {
    return {
      status: 413,
      type: 'PayloadTooLarge',
      message: `The variables of this request are ${bytes} bytes of JSON, above the limit of ${opts.maxVariablesBytes} bytes (BATON_MAX_VARIABLES_BYTES)`,
      details: { limit: 'maxVariablesBytes', max: opts.maxVariablesBytes, actual: bytes },
    };
  }
  const xml = bpmnText(req);
  const tooMany = xml === undefined ? undefined : bpmnElementsRefusal(xml, opts.maxBpmnElements);
  if (tooMany) return { status: 413, ...tooMany };
  if (requestedWaitMs(req) > 0 && parkedPolls.parked >= opts.maxParkedPolls) {
    return {
      status: 503,
      type: 'TooManyParkedPolls',
      headers: { 'retry-after': '1' },
      message: `This node already holds ${parkedPolls.parked} parked long polls, the limit (BATON_MAX_PARKED_POLLS=${opts.maxParkedPolls}); retry shortly, or on another node`,
      details: { limit: 'maxParkedPolls', max: opts.maxParkedPolls },
    };
  }
  return undefined;
}

// A body of 20,000 nested arrays is 40 KB, well inside the size limits, and every recursive
// walk of it (these checks, JSON.stringify, the store) overflows the stack: a 500, or with a
// lone surrogate escape in it an uncaught exception that stopped the process. Bodies whose
// text opens more arrays and objects than the limit allows are measured after parsing.
const mayNestDeep = new WeakSet<object>();

function openedContainers(body: Buffer): number {
  let n = 0;
  for (let i = 0; i < body.length; i++) if (body[i] === 0x5b || body[i] === 0x7b) n++; // [ {
  return n;
}

/** Whether the value nests arrays and objects more than `max` levels deep; a loop, not a recursion. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [inner, depth] = next;
    if (!inner || typeof inner !== 'object') continue;
    if (depth > max) return true;
    for (const child of Array.isArray(inner) ? inner : Object.values(inner)) pending.push([child, depth + 1]);
  }
  return false;
}

function refuseDeepNesting(req: Request, max: number): BatonError | undefined {
  return mayNestDeep.has(req) ? deepNestingError(req.body, max) : undefined;
}

function deepNestingError(body: unknown, max: number): BatonError | undefined {
  if (!nestsDeeperThan(body, max)) return undefined;
  return new BatonError(
    'validation',
    `The request body nests arrays and objects more than ${max} levels deep (BATON_MAX_JSON_DEPTH)`,
    { limit: 'maxJsonDepth', max },
  );
}

// JSON.parse turns an escape such as "\ud800" into a lone UTF-16 surrogate, which no UTF-8
// text can hold: PostgreSQL refuses it in jsonb, and a start with one in its business key
// or variables answered 500 (found by test/fuzz/api.test.ts). Such a body is refused as bad
// JSON. Only a body whose text has a "\ud" escape is walked.
const withSurrogateEscapes = new WeakSet<object>();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The parsers' verify: marks the bodies the checks after parsing must walk. */
function noteRawBody(maxDepth: number): (req: object, res: unknown, body: Buffer) => void {
  return (req, _res, body) => {
    if (body.includes('\\ud') || body.includes('\\uD')) withSurrogateEscapes.add(req);
    if (openedContainers(body) > maxDepth) mayNestDeep.add(req);
  };
}

function refuseLoneSurrogates(req: Request): Error | undefined {
  return withSurrogateEscapes.has(req) ? loneSurrogateError(req.body) : undefined;
}

function loneSurrogateError(body: unknown): Error | undefined {
  const at = loneSurrogateAt(body, '');
  if (at === undefined) return undefined;
  return Object.assign(
    new Error(`the string at ${at || 'the top level'} has a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its pair)`),
    { type: 'entity.parse.failed', status: 400 },
  );
}

/** The path of the first key or string holding a lone surrogate, or undefined. */
function loneSurrogateAt(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? path : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const here = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (LONE_SURROGATE.test(key)) return here;
    const found = loneSurrogateAt(inner, here);
    if (found !== undefined) return found;
  }
  return undefined;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH']);

/** One of the two APIs whose requests the limits check: what differs between them. */
interface Mount {
  /** lower case; the checks see the path below it, as a router mounted there would */
  prefix: string;
  json: RequestHandler;
  /** BPMN sent as XML (the native API's deploy and lint) */
  xml?: RequestHandler;
  /** answers a body that cannot be read or parsed */
  parseError: ErrorRequestHandler;
}

/** The mount a path is under, matched as express matches a mount: any case, then the end or a slash. */
function mountOf(path: string, mounts: Mount[]): Mount | undefined {
  return mounts.find(
    ({ prefix }) =>
      (path.length === prefix.length || path[prefix.length] === '/') &&
      (path.startsWith(prefix) || path.slice(0, prefix.length).toLowerCase() === prefix),
  );
}

/**
 * The limits of /api and /engine-rest as one middleware: the URL, then the body, read once
 * with the mount's parser and limit (the routers behind find it read), then the checks of a
 * write. One function, not a router of its own: every request walks each router layer
 * in front of its route.
 */
export function limitsMiddleware(opts: LimitOptions, parkedPolls: ParkedPolls, log: Logger): RequestHandler {
  const verify = noteRawBody(opts.maxJsonDepth);
  const camunda: Mount = {
    prefix: '/engine-rest',
    json: express.json({ limit: opts.camundaJsonLimit, type: ['application/json', 'application/*+json'], verify }),
    parseError: camundaErrorHandler(log),
  };
  const native: Mount = {
    prefix: '/api',
    json: express.json({ limit: opts.jsonLimit, verify }),
    xml: express.text({ type: ['application/xml', 'text/xml'], limit: opts.xmlLimit }),
    // the app's error table
    parseError: (err, _req, _res, next) => next(err),
  };
  const mounts = [native, camunda];

  return (req, res, next) => {
    const mount = mountOf(req.path, mounts);
    if (!mount) return next();
    if (req.originalUrl.includes('%') && decodedHoldsNul(req.originalUrl)) return answerRefusal(res, NUL_IN_URL);
    if (mount === camunda) res.locals[BPMN_ELEMENT_LIMIT] = opts.maxBpmnElements;
    readBody(mount, opts.maxJsonDepth, req, res, (err) => {
      if (err) return mount.parseError(err, req, res, next);
      if (!WRITES.has(req.method)) return next();
      // Runs in the parser's callback, outside any router layer: a throw here would be an uncaught exception.
      try {
        const below = req.path.slice(mount.prefix.length) || '/';
        const write: WriteRequest = { path: below, originalUrl: req.originalUrl, body: req.body };
        const refusal = writeLimitRefusal(opts, parkedPolls, write);
        if (refusal) return answerRefusal(res, refusal);
        next();
      } catch (thrown) {
        next(thrown);
      }
    });
  };
}

/**
 * Reads the body: as JSON, else (a body the JSON parser left, on /api) as XML; then the
 * checks after parsing, depth first (the surrogate walk recurses). `done` gets the first error.
 */
function readBody(mount: Mount, maxDepth: number, req: Request, res: Response, done: (err?: unknown) => void): void {
  void mount.json(req, res, (err?: unknown) => {
    if (err) return done(err);
    if (req.body === undefined && mount.xml) return void mount.xml(req, res, done);
    let refused: unknown;
    try {
      refused = refuseDeepNesting(req, maxDepth) ?? refuseLoneSurrogates(req);
    } catch (thrown) {
      refused = thrown;
    }
    done(refused);
  });
}
