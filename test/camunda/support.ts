// Helpers for driving Baton's /engine-rest with the official Camunda client and plain HTTP.
import { Client } from 'camunda-external-task-client-js';
import { checkResponse } from '../support/response-check.ts';
import type { ApiClient } from '../support/server.ts';

export interface ClientOptions {
  workerId?: string;
  lockDuration?: number;
  asyncResponseTimeout?: number;
  interval?: number;
  maxTasks?: number;
  interceptors?: unknown;
}

/** A Camunda client against baseUrl/engine-rest, tracked so stopAll() ends its polling. */
export function clientPool() {
  const clients: any[] = [];
  return {
    create(url: string, opts: ClientOptions = {}): any {
      const client = new Client({
        baseUrl: `${url}/engine-rest`,
        workerId: opts.workerId ?? 'camunda-worker',
        lockDuration: opts.lockDuration ?? 30_000,
        asyncResponseTimeout: opts.asyncResponseTimeout ?? 1000,
        interval: opts.interval ?? 20,
        maxTasks: opts.maxTasks ?? 10,
        autoPoll: false,
        ...(opts.interceptors ? { interceptors: opts.interceptors } : {}),
      });
      client.on('poll:error', () => undefined); // expected while a server restarts
      clients.push(client);
      return client;
    },
    stopAll(): void {
      for (const c of clients.splice(0)) c.stop();
    },
  };
}

/** POST JSON to /engine-rest and answer status, headers and parsed body. */
export async function engineRest(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}/engine-rest${path}`, {
    method,
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  // Checked against GET /api/openapi-camunda.json's schemas (test/support/response-check.ts).
  checkResponse({
    method,
    path: `/engine-rest${path}`,
    status: res.status,
    contentType: res.headers.get('content-type'),
    body: json,
  });
  return { status: res.status, headers: res.headers, body: json };
}

/** Starts an instance through the Camunda API and answers its id. */
export async function startByKey(url: string, key: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await engineRest(url, 'POST', `/process-definition/key/${key}/start`, body);
  if (res.status !== 200) throw new Error(`start ${key}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

export async function instanceStatus(api: ApiClient, id: string): Promise<string> {
  return (await api.get(`/api/instances/${id}`)).body.status as string;
}

/** A promise and its resolve, for handlers that report back to the test. */
export function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
