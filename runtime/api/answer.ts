// JSON answers written straight to node's response: the hot routes answer on every task
// call, and res.json's header handling costs CPU there; Camunda's answers name their own
// content type (camunda/api/errors.ts).
import type { ServerResponse } from 'node:http';

/** A JSON answer; without a body, an empty one (204). Header names in lower case. */
export interface JsonAnswer {
  status: number;
  body?: unknown;
  /** a `content-type` here replaces the default (Camunda's answers say exactly `application/json`) */
  headers?: Record<string, string>;
}

/**
 * A request refused before its route (by the drain guard, the authorizer or a limit):
 * answered as JSON { type, message, details? } with its status and headers.
 */
export interface Refusal {
  status: number;
  type: string;
  message: string;
  details?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export function refusalAnswer(r: Refusal): JsonAnswer {
  return { status: r.status, headers: r.headers, body: { type: r.type, message: r.message, details: r.details } };
}

/** Writes the answer as res.json would: the same status, content type (unless the answer names its own) and JSON text. */
export function sendAnswer(res: ServerResponse, answer: JsonAnswer): void {
  if (answer.body === undefined) {
    res.writeHead(answer.status, answer.headers);
    res.end();
    return;
  }
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    'content-type': 'application/json; charset=utf-8',
    ...answer.headers,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Aborted when the caller hangs up before the answer is written: a parked poll must not keep holding locks for nobody. */
export function abortedByHangUp(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  return gone.signal;
}
