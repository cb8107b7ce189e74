// The one typed client of the designer: it alone knows the URLs of the REST API.
import type {
  Definition,
  DefinitionSummary,
  DeployResult,
  Diagram,
  DiagramSummary,
  ElementTemplateJson,
  Heatmap,
  HistoryEvent,
  IncidentFilter,
  IncidentItem,
  InstanceDetail,
  InstanceFilter,
  InstanceSummary,
  LintResult,
  Me,
  RetryResult,
  TopicActivity,
  UserTask,
  UserTaskActor,
  UserTaskDetail,
  UserTaskFilter,
  VariablesEdit,
} from './types.ts';
import { askForToken, authHeaders, currentToken } from './auth.ts';

/** An answer of the API that is not a success, or no answer at all. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Sends the request with the stored token; on 401 asks for a token and sends it again, until success or cancel. */
async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  for (;;) {
    const sentWith = currentToken();
    const res = await send(method, path, body);
    if (res.status !== 401) return answer<T>(res);
    const refused = await answer<T>(res).catch((err: ApiError) => err);
    if (!(refused instanceof ApiError)) return refused;
    // Refused with a token the user replaced meanwhile (another call's prompt was answered
    // while this one was in flight): send it again with the new one instead of asking again.
    if (currentToken() !== sentWith) continue;
    const token = await askForToken(refused.message);
    if (token === undefined)
      throw new ApiError(
        401,
        'Unauthorized',
        `${refused.message}. Set a token (the token button at the top right) and try again`,
      );
  }
}

async function send(method: string, path: string, body?: unknown): Promise<Response> {
  try {
    return await fetch(path, {
      method,
      headers: { ...authHeaders(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'Unreachable', 'The Baton server does not answer; check that it runs and try again');
  }
}

async function answer<T>(res: Response): Promise<T> {
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const err = (parsed ?? {}) as { type?: string; message?: string; details?: unknown };
    throw new ApiError(res.status, err.type ?? 'HttpError', err.message ?? `The server answered ${res.status}`, err.details);
  }
  return parsed as T;
}

function query(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '' && v !== false) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

const enc = encodeURIComponent;

/** The history page the designer reads: the API's largest. */
const HISTORY_PAGE = 1000;

/** One history page; a 503 (writers of the instance still open) is read again a second later, three times at most. */
async function historyPage(id: string, afterSeq: number): Promise<{ items: HistoryEvent[] }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request<{ items: HistoryEvent[] }>(
        'GET',
        `/api/instances/${enc(id)}/history${query({ afterSeq, limit: HISTORY_PAGE })}`,
      );
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 503 || attempt >= 3) throw err;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

export const api = {
  listDiagrams: () => request<{ items: DiagramSummary[] }>('GET', '/api/diagrams').then((r) => r.items),
  getDiagram: (id: string) => request<Diagram>('GET', `/api/diagrams/${enc(id)}`),
  createDiagram: (name: string, xml: string) => request<Diagram>('POST', '/api/diagrams', { name, xml }),
  renameDiagram: (id: string, name: string) => request<Diagram>('PATCH', `/api/diagrams/${enc(id)}`, { name }),
  saveDiagram: (id: string, xml: string) => request<Diagram>('PATCH', `/api/diagrams/${enc(id)}`, { xml }),
  deleteDiagram: (id: string) => request<void>('DELETE', `/api/diagrams/${enc(id)}`),

  lint: (xml: string) => request<LintResult>('POST', '/api/definitions/lint', { xml }),
  deploy: (xml: string) => request<DeployResult>('POST', '/api/definitions', { xml }),
  listDefinitions: () => request<{ items: DefinitionSummary[] }>('GET', '/api/definitions').then((r) => r.items),
  getDefinition: (key: string, version?: number) =>
    request<Definition>('GET', version ? `/api/definitions/${enc(key)}/versions/${version}` : `/api/definitions/${enc(key)}`),
  getHeatmap: (key: string, version?: number) =>
    request<Heatmap>('GET', `/api/definitions/${enc(key)}/heatmap${query({ version })}`),

  listElementTemplates: () => request<ElementTemplateJson[]>('GET', '/api/element-templates'),
  topicActivity: () => request<{ windowMs: number; items: TopicActivity[] }>('GET', '/api/topics/activity'),

  startInstance: (body: { definitionKey: string; businessKey?: string; variables?: Record<string, unknown> }) =>
    request<InstanceSummary>('POST', '/api/instances', body),
  listInstances: (f: InstanceFilter) =>
    request<{ items: InstanceSummary[]; nextCursor: string | null }>('GET', `/api/instances${query({ ...f })}`),
  getInstance: (id: string) => request<InstanceDetail>('GET', `/api/instances/${enc(id)}`),
  /** Every event of the instance, a page of HISTORY_PAGE at a time. */
  getWholeHistory: async (id: string): Promise<HistoryEvent[]> => {
    const all: HistoryEvent[] = [];
    for (;;) {
      const afterSeq = all.at(-1)?.seq ?? 0;
      const page = await historyPage(id, afterSeq);
      all.push(...page.items);
      if (page.items.length < HISTORY_PAGE) return all;
    }
  },
  cancelInstance: (id: string) => request<{ id: string; status: string }>('POST', `/api/instances/${enc(id)}/cancel`),
  suspendInstance: (id: string) => request<{ id: string; suspended: boolean }>('POST', `/api/instances/${enc(id)}/suspend`),
  resumeInstance: (id: string) => request<{ id: string; suspended: boolean }>('POST', `/api/instances/${enc(id)}/resume`),
  editVariables: (id: string, edit: VariablesEdit) =>
    request<{ id: string; revision: number; variables: Record<string, unknown> }>(
      'PATCH',
      `/api/instances/${enc(id)}/variables`,
      edit,
    ),

  listIncidents: (f: IncidentFilter) =>
    request<{ items: IncidentItem[]; nextCursor?: string }>('GET', `/api/incidents${query({ ...f })}`),
  retryIncident: (id: string, retries?: number) =>
    request<{ id: string; instanceStatus: string }>(
      'POST',
      `/api/incidents/${enc(id)}/retry`,
      retries === undefined ? undefined : { retries },
    ),
  retryIncidents: (ids: string[], retries?: number) =>
    request<{ results: RetryResult[]; more: boolean }>('POST', '/api/incidents/retry', {
      ids,
      ...(retries === undefined ? {} : { retries }),
    }),

  me: () => request<Me>('GET', '/api/me'),
  listUserTasks: (f: UserTaskFilter) =>
    request<{ items: UserTask[]; nextCursor?: string }>('GET', `/api/user-tasks${query({ ...f })}`),
  getUserTask: (id: string) => request<UserTaskDetail>('GET', `/api/user-tasks/${enc(id)}`),
  claimUserTask: (id: string, actor: UserTaskActor) => request<UserTask>('POST', `/api/user-tasks/${enc(id)}/claim`, actor),
  unclaimUserTask: (id: string, actor: UserTaskActor) => request<UserTask>('POST', `/api/user-tasks/${enc(id)}/unclaim`, actor),
  throwUserTaskError: (id: string, actor: UserTaskActor, errorCode: string) =>
    request<{ id: string; status: 'errored'; instanceId: string }>('POST', `/api/user-tasks/${enc(id)}/bpmn-error`, {
      ...(actor.userId ? { userId: actor.userId } : {}),
      errorCode,
    }),
  raiseUserTaskEscalation: (id: string, actor: UserTaskActor, escalationCode: string) =>
    request<{ id: string; status: 'escalated'; instanceId: string; caughtBy: string; taskOpen: boolean }>(
      'POST',
      `/api/user-tasks/${enc(id)}/bpmn-escalation`,
      { ...(actor.userId ? { userId: actor.userId } : {}), escalationCode },
    ),
  /** 400 ValidationError: details.fields names each field the form refused */
  completeUserTask: (id: string, actor: UserTaskActor, variables: Record<string, unknown>) =>
    request<{ id: string; status: 'completed'; instanceId: string }>('POST', `/api/user-tasks/${enc(id)}/complete`, {
      ...(actor.userId ? { userId: actor.userId } : {}),
      variables,
    }),
};
