// The CLI's calls to a running server (`baton deploy`, `baton start`): which URL it
// talks to, and one readable line instead of a stack when the server cannot be reached
// or answers that the definition or instance exists already.

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:8080';

/** A call with no answer in this time is reported like a server out of reach. */
const ANSWER_TIMEOUT_MS = 60_000;

export interface ServerUrl {
  url: string;
  /** where the URL came from, for the message when it cannot be reached */
  from: 'BATON_URL' | 'PORT' | 'default';
}

/** BATON_URL, else the local server on PORT, else on 8080 (`baton serve`'s default). */
export function serverUrl(env: NodeJS.ProcessEnv): ServerUrl {
  if (env.BATON_URL) return { url: env.BATON_URL.replace(/\/+$/, ''), from: 'BATON_URL' };
  if (env.PORT) return { url: `http://127.0.0.1:${env.PORT}`, from: 'PORT' };
  return { url: DEFAULT_SERVER_URL, from: 'default' };
}

export interface ServerCall {
  method: string;
  route: string;
  body: string;
  contentType: string;
}

export interface CallOutput {
  /** the answer's body, for scripts */
  out(line: string): void;
  /** what a person reads: refusals, the server out of reach, a thing that exists already */
  err(line: string): void;
}

/** Sends one call; answers the exit code (0 when the server took it, 1 otherwise). */
export async function callServer(env: NodeJS.ProcessEnv, call: ServerCall, io: CallOutput): Promise<number> {
  const server = serverUrl(env);
  let res: Response;
  try {
    res = await fetch(`${server.url}${call.route}`, {
      method: call.method,
      // BATON_TOKEN: a token of a role allowed to deploy and start (admin), sent as Bearer.
      headers: { 'content-type': call.contentType, ...(env.BATON_TOKEN ? { authorization: `Bearer ${env.BATON_TOKEN}` } : {}) },
      body: call.body,
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
  } catch (err) {
    io.err(unreachable(server, err));
    return 1;
  }
  const text = await res.text();
  const body = parseJson(text);
  io.out(body === undefined ? text : JSON.stringify(body, null, 2));
  if (!res.ok) return 1;
  const note = existingNote(call, res.status, body);
  if (note) io.err(note);
  return 0;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused, nothing listens there',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name cannot be resolved now',
  ECONNRESET: 'the connection was reset',
  EHOSTUNREACH: 'no route to the host',
};

const FROM = { BATON_URL: 'from BATON_URL', PORT: 'from PORT', default: 'the default' } as const;

/** One line: the URL tried, why it failed, and how to point the CLI elsewhere. */
export function unreachable(server: ServerUrl, err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  const why =
    e.name === 'TimeoutError'
      ? `no answer within ${ANSWER_TIMEOUT_MS / 1000} s`
      : (REASONS[e.cause?.code ?? ''] ?? e.cause?.code ?? e.cause?.message ?? e.message ?? String(err));
  return `Cannot reach the Baton server at ${server.url} (${FROM[server.from]}): ${why}. Start it with \`baton serve\`, or set BATON_URL (e.g. BATON_URL=http://host:8080) or PORT to where it listens.`;
}

/** The server answers 200 instead of 201 when the start or deploy changed nothing: say so. */
function existingNote(call: ServerCall, status: number, body: unknown): string | undefined {
  if (status !== 200 || !body || typeof body !== 'object') return undefined;
  const b = body as { id?: string; businessKey?: string | null; key?: string; version?: number };
  if (call.route === '/api/instances') return `instance ${b.id} already exists for business key ${b.businessKey}`;
  if (call.route === '/api/definitions') return `definition ${b.key} version ${b.version} is already deployed with this XML`;
  return undefined;
}
