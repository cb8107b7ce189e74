// Which roles may call which route: one table, first match wins (docs/security.md).
// Paths are matched lower-cased, as express routes them case-insensitively.

export const Role = {
  /** deploys and operates: everything */
  admin: 'admin',
  /** external-task APIs only (native and /engine-rest) */
  worker: 'worker',
  /** read APIs only */
  viewer: 'viewer',
  /** a person working on user tasks: the tasklist's APIs, as themselves */
  person: 'person',
} as const;
export type Role = (typeof Role)[keyof typeof Role];

export const ROLES: readonly Role[] = [Role.admin, Role.worker, Role.viewer, Role.person];

/** 'open' needs no token at all. */
export type Access = 'open' | readonly Role[];

interface Rule {
  methods: 'reads' | 'writes' | 'any';
  /** matches the path itself and everything below it */
  prefix: string;
  access: Access;
  /** what the rule is for, shown in docs and test names */
  why: string;
}

const ALL: readonly Role[] = [Role.admin, Role.worker, Role.viewer, Role.person];
const WORKERS: readonly Role[] = [Role.admin, Role.worker];
/** a person reads what a viewer reads: the process around their task, its instance moving on */
const READERS: readonly Role[] = [Role.admin, Role.viewer, Role.person];
const OPERATORS_READING: readonly Role[] = [Role.admin, Role.viewer];
const ADMIN: readonly Role[] = [Role.admin];
const PEOPLE: readonly Role[] = [Role.admin, Role.person];

export const ROUTE_RULES: readonly Rule[] = [
  { methods: 'reads', prefix: '/healthz', access: 'open', why: 'process up' },
  { methods: 'reads', prefix: '/readyz', access: 'open', why: 'database reachable, migrations applied' },
  { methods: 'reads', prefix: '/api/me', access: ALL, why: 'who the token names' },
  { methods: 'writes', prefix: '/api/user-tasks', access: PEOPLE, why: 'claim, release, assign and complete user tasks' },
  { methods: 'writes', prefix: '/engine-rest/task', access: PEOPLE, why: 'Camunda task API: claim, complete, submit forms' },
  { methods: 'any', prefix: '/api/external-tasks', access: WORKERS, why: 'native external-task API' },
  { methods: 'writes', prefix: '/engine-rest/external-task', access: WORKERS, why: 'Camunda external-task API' },
  { methods: 'reads', prefix: '/engine-rest/external-task', access: ALL, why: 'Camunda external-task reads' },
  { methods: 'reads', prefix: '/engine-rest/engine', access: ALL, why: 'Camunda engine name' },
  { methods: 'reads', prefix: '/engine-rest/version', access: ALL, why: 'Camunda REST version' },
  { methods: 'writes', prefix: '/api/element-templates', access: WORKERS, why: "a worker publishes its topic's template" },
  { methods: 'reads', prefix: '/api/element-templates', access: ALL, why: 'element templates' },
  { methods: 'reads', prefix: '/api/topics', access: ALL, why: 'which workers fetch which topics' },
  { methods: 'writes', prefix: '/api/definitions/lint', access: READERS, why: 'compile without deploying' },
  { methods: 'reads', prefix: '/api', access: READERS, why: 'native reads' },
  { methods: 'reads', prefix: '/engine-rest', access: READERS, why: 'Camunda reads' },
  { methods: 'reads', prefix: '/metrics', access: OPERATORS_READING, why: 'Prometheus scrape' },
  { methods: 'any', prefix: '/api', access: ADMIN, why: 'deploy, start, cancel, retry, messages, signals, diagram writes' },
  { methods: 'any', prefix: '/engine-rest', access: ADMIN, why: 'Camunda deploy, start, messages, signals' },
  { methods: 'any', prefix: '/metrics', access: ADMIN, why: 'no writes exist there' },
];

const READ_METHODS = new Set(['GET', 'HEAD']);

function matchesPrefix(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** Collapses repeated slashes and lower-cases, as express matches routes. */
export function normalizePath(path: string): string {
  return path.replace(/\/{2,}/g, '/').toLowerCase();
}

/** The roles that may call (method, path); 'open' for the designer's files, health and unknown paths. */
export function accessFor(method: string, rawPath: string): Access {
  const path = normalizePath(rawPath);
  const isRead = READ_METHODS.has(method.toUpperCase());
  for (const rule of ROUTE_RULES) {
    if (rule.methods === 'reads' && !isRead) continue;
    if (rule.methods === 'writes' && isRead) continue;
    if (matchesPrefix(path, rule.prefix)) return rule.access;
  }
  return 'open';
}
