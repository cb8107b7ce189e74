// Short helpers for driving processes through the native API in tests.
import { expect } from 'vitest';
import type { ApiClient } from './server.ts';
import { waitFor } from './server.ts';

export interface LockedTask {
  id: string;
  topic: string;
  instanceId: string;
  stepId: string;
  businessKey: string | null;
  attempt: number;
  retriesLeft: number;
  leaseExpiriesLeft: number;
  lockToken: string;
  lockExpiresAt: string;
  idempotencyKey: string;
  variables: Record<string, unknown>;
  scopePath?: string;
  headers?: Record<string, string>;
}

export async function deploy(
  api: ApiClient,
  xml: string,
): Promise<{ id: string; key: string; version: number; fingerprint: string }> {
  const res = await api.post('/api/definitions', { xml });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body;
}

/** Deploys a diagram whose input and output mappings all run: deploy warns about none of them. */
export async function deployMappingsRun(api: ApiClient, xml: string): Promise<void> {
  const res = await api.post('/api/definitions', { xml });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(JSON.stringify(res.body.warnings ?? [])).not.toMatch(/mapping/i);
}

export async function start(
  api: ApiClient,
  definitionKey: string,
  extra: { businessKey?: string; variables?: Record<string, unknown> } = {},
): Promise<string> {
  const res = await api.post('/api/instances', { definitionKey, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

export async function fetchTasks(
  api: ApiClient,
  workerId: string,
  topics: string[],
  opts: { maxTasks?: number; waitMs?: number; lockDurationMs?: number } = {},
): Promise<LockedTask[]> {
  const res = await api.post('/api/external-tasks/fetch-and-lock', {
    workerId,
    maxTasks: opts.maxTasks ?? 10,
    ...(opts.waitMs !== undefined ? { waitMs: opts.waitMs } : {}),
    topics: topics.map((name) => ({ name, lockDurationMs: opts.lockDurationMs ?? 30_000 })),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Fetches until one task of the topic is locked (it may wait for a retry backoff). */
export async function fetchOne(api: ApiClient, workerId: string, topic: string, lockDurationMs = 30_000): Promise<LockedTask> {
  return waitFor(
    async () => (await fetchTasks(api, workerId, [topic], { maxTasks: 1, lockDurationMs }))[0],
    10_000,
    `a task on ${topic}`,
  );
}

export function complete(api: ApiClient, task: LockedTask, workerId: string, variables?: Record<string, unknown>) {
  return api.post(`/api/external-tasks/${task.id}/complete`, {
    workerId,
    lockToken: task.lockToken,
    ...(variables ? { variables } : {}),
  });
}

export async function instanceOf(api: ApiClient, id: string): Promise<any> {
  const res = await api.get(`/api/instances/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

export async function waitForStatus(api: ApiClient, id: string, status: string, timeoutMs = 10_000): Promise<any> {
  return waitFor(
    async () => {
      const i = await instanceOf(api, id);
      return i.status === status ? i : undefined;
    },
    timeoutMs,
    `instance ${id} to be ${status}`,
  );
}

export async function historyKinds(api: ApiClient, id: string): Promise<string[]> {
  const res = await api.get(`/api/instances/${id}/history`);
  return (res.body.items as { kind: string }[]).map((e) => e.kind);
}

/** A Camunda 7 process `id` that waits for signal `signal`: start -> catch `wait` -> task on topic `<id>-after` -> end. */
export function signalWaiterXml(id: string, signal: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:signal id="sig" name="${signal}" />
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:signalEventDefinition signalRef="sig" /></bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
}

/** Waits until step `stepId` of instance `id` is active (a wait has started, a task is open). */
/** The first open incident of instance `id`, once there is one. */
export async function waitForIncident(api: ApiClient, id: string, timeoutMs = 10_000): Promise<any> {
  return waitFor(
    async () => ((await api.get(`/api/incidents?instanceId=${id}`)).body.items as any[])[0],
    timeoutMs,
    `an incident of instance ${id}`,
  );
}

export async function waitForActiveStep(api: ApiClient, id: string, stepId: string, timeoutMs = 10_000): Promise<void> {
  await waitFor(
    async () =>
      ((await instanceOf(api, id)).steps as any[]).some((s) => s.stepId === stepId && s.status === 'active') || undefined,
    timeoutMs,
    `instance ${id} waiting at ${stepId}`,
  );
}
