// Who uses the tasklist. With tokens, the token's owner as GET /api/me names them (a person
// token's groups come from the server). On a server without tokens nobody is signed in, so the
// tasklist acts for the name (and groups) typed into it, kept in this browser as the token is.
import { api, ApiError } from './api-client.ts';
import { askForToken, saveToken } from './auth.ts';
import type { Me, UserTask, UserTaskActor, UserTaskFilter } from './types.ts';

const STORAGE_KEY = 'baton.person';

export interface Person {
  /** whom the tasklist acts for; null: nobody yet (no token given, no name typed) */
  name: string | null;
  groups: string[];
  role: Me['role'];
  tokensRequired: boolean;
  /** 'token': the server names them; 'browser': typed here, on a server without tokens */
  source: 'token' | 'browser';
}

interface TypedPerson {
  name: string;
  groups: string[];
}

function readTyped(): TypedPerson | undefined {
  try {
    const parsed = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null') as TypedPerson | null;
    return parsed && typeof parsed.name === 'string' && Array.isArray(parsed.groups) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** On a server without tokens: the name and groups the tasklist acts for. Empty name: nobody. */
export function saveTypedPerson(name: string, groups: string[]): void {
  try {
    if (name) localStorage.setItem(STORAGE_KEY, JSON.stringify({ name, groups }));
    else localStorage.removeItem(STORAGE_KEY);
  } catch {
    // storage disabled: the name lasts this page only
  }
}

/**
 * Whom the token names. Without a token on a server that requires one, the API client's 401
 * opens the token dialog; cancelled, nobody is signed in.
 */
async function readMe(): Promise<Me> {
  try {
    return await api.me();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return { name: null, role: null, groups: [], tokensRequired: true };
    throw err;
  }
}

/** Who is signed in; `ask` (the Sign in button): open the token dialog first. */
export async function signIn(ask = false): Promise<Person> {
  if (ask) await askForToken('Sign in: paste your token to see your tasks');
  const me = await readMe();
  if (me.name !== null)
    return { name: me.name, groups: me.groups, role: me.role, tokensRequired: me.tokensRequired, source: 'token' };
  const typed = me.tokensRequired ? undefined : readTyped();
  return {
    name: typed?.name ?? null,
    groups: typed?.groups ?? [],
    role: me.role,
    tokensRequired: me.tokensRequired,
    source: 'browser',
  };
}

/** Forgets the token (or the typed name): nobody is signed in until the next sign-in. */
export function signOut(person: Person): Person {
  if (person.source === 'token') saveToken('');
  else saveTypedPerson('', []);
  return { ...person, name: null, groups: [], role: null };
}

/** What claim, unclaim and complete send: a person token acts for itself, the others name the person. */
export function actorOf(person: Person): UserTaskActor {
  if (person.role === 'person' || person.name === null) return {};
  return { userId: person.name, ...(person.groups.length > 0 ? { groups: person.groups } : {}) };
}

export const TaskTab = {
  /** tasks the person holds */
  mine: 'mine',
  /** tasks nobody holds that the person, or one of their groups, may claim */
  groups: 'groups',
  /** every open task: operators and servers without tokens */
  all: 'all',
} as const;
export type TaskTab = (typeof TaskTab)[keyof typeof TaskTab];

/** Persons see their own tabs; "All" is for admins, viewers and servers without tokens. */
export function tabsFor(person: Person): TaskTab[] {
  // Nobody signed in where tokens are required: no list to read (each read would ask for a token).
  if (person.name === null && person.tokensRequired) return [];
  const own: TaskTab[] = person.name === null ? [] : [TaskTab.mine, TaskTab.groups];
  return person.role === 'person' || person.role === 'worker' ? own : [...own, TaskTab.all];
}

export function filterOf(tab: TaskTab, person: Person): UserTaskFilter {
  if (tab === TaskTab.mine) return { assignee: person.name ?? '' };
  if (tab === TaskTab.groups) {
    // A person token's groups are the server's; others send the groups they were given.
    const groups = person.role === 'person' ? undefined : person.groups.join(',');
    return { candidateUser: person.name ?? '', unassigned: true, ...(groups ? { candidateGroups: groups } : {}) };
  }
  return {};
}

export function holds(person: Person, task: Pick<UserTask, 'assignee'>): boolean {
  return person.name !== null && task.assignee === person.name;
}
