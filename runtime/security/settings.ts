// Security and operations settings from the environment (docs/operations.md lists each).
import type { AuthOptions } from './auth.ts';
import { DEFAULT_LIMITS, MAX_JSON_DEPTH_CEILING, type LimitOptions } from './limits.ts';
import { parseGroups } from './people.ts';
import { parseTokens } from './tokens.ts';
import { DEFAULT_SHUTDOWN_GRACE_MS } from '../ops/shutdown.ts';
import { DEFAULT_FEEL_BUDGET, type FeelBudget } from '../shared/feel-budget.ts';
import { DEFAULT_SCRIPT_BUDGET, type ScriptBudget } from '../engine/script-sandbox.ts';

export interface SecuritySettings {
  auth: AuthOptions;
  limits: LimitOptions;
  /** ended instances older than this are deleted; 0 keeps them forever */
  retentionDays: number;
  /** pause between retention runs */
  retentionIntervalMs: number;
  /** SIGTERM/SIGINT: time to drain before the process exits regardless */
  shutdownGraceMs: number;
  /** progress frames of ended instances are deleted after this (each generation's last frame stays) */
  frameRetentionMs: number;
  /** length and depth of FEEL expressions at deploy, time and heap of an evaluation */
  feel: FeelBudget;
  /** script tasks' JavaScript sandbox (what one run may write is the variables limit) */
  script: Omit<ScriptBudget, 'maxWriteBytes'>;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(
      `${name} must be an integer of at least ${min}${max < Number.MAX_SAFE_INTEGER ? ` and at most ${max}` : ''}, got "${raw}"`,
    );
  }
  return n;
}

function size(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+(b|kb|mb)?$/i.test(raw)) throw new Error(`${name} must be a size such as 512kb or 2mb, got "${raw}"`);
  return raw.toLowerCase();
}

export function readSecuritySettings(env: NodeJS.ProcessEnv = process.env): SecuritySettings {
  return {
    auth: {
      tokens: parseTokens(env.BATON_TOKENS),
      groups: parseGroups(env.BATON_GROUPS),
      failures: {
        burst: int(env, 'BATON_AUTH_FAILURE_BURST', 20, 1),
        perMinute: int(env, 'BATON_AUTH_FAILURE_PER_MINUTE', 60, 1),
      },
    },
    limits: {
      jsonLimit: size(env, 'BATON_JSON_LIMIT', DEFAULT_LIMITS.jsonLimit),
      camundaJsonLimit: size(env, 'BATON_CAMUNDA_JSON_LIMIT', DEFAULT_LIMITS.camundaJsonLimit),
      maxVariablesBytes: int(env, 'BATON_MAX_VARIABLES_BYTES', DEFAULT_LIMITS.maxVariablesBytes, 1),
      maxParkedPolls: int(env, 'BATON_MAX_PARKED_POLLS', DEFAULT_LIMITS.maxParkedPolls, 0),
      xmlLimit: size(env, 'BATON_XML_LIMIT', DEFAULT_LIMITS.xmlLimit),
      maxBpmnElements: int(env, 'BATON_MAX_BPMN_ELEMENTS', DEFAULT_LIMITS.maxBpmnElements, 1),
      maxJsonDepth: int(env, 'BATON_MAX_JSON_DEPTH', DEFAULT_LIMITS.maxJsonDepth, 2, MAX_JSON_DEPTH_CEILING),
    },
    retentionDays: int(env, 'BATON_RETENTION_DAYS', 0, 0),
    retentionIntervalMs: int(env, 'BATON_RETENTION_INTERVAL_MS', 3_600_000, 1000),
    shutdownGraceMs: int(env, 'BATON_SHUTDOWN_GRACE_MS', DEFAULT_SHUTDOWN_GRACE_MS, 100),
    frameRetentionMs: int(env, 'BATON_FRAME_RETENTION_MS', 24 * 3_600_000, 0),
    feel: {
      maxLength: int(env, 'BATON_FEEL_MAX_LENGTH', DEFAULT_FEEL_BUDGET.maxLength, 1),
      maxDepth: int(env, 'BATON_FEEL_MAX_DEPTH', DEFAULT_FEEL_BUDGET.maxDepth, 4),
      timeMs: int(env, 'BATON_FEEL_TIME_BUDGET_MS', DEFAULT_FEEL_BUDGET.timeMs, 1),
      heapMb: int(env, 'BATON_FEEL_HEAP_MB', DEFAULT_FEEL_BUDGET.heapMb, 16),
      maxResultLength: int(env, 'BATON_FEEL_MAX_RESULT_LENGTH', DEFAULT_FEEL_BUDGET.maxResultLength, 1),
    },
    script: {
      timeMs: int(env, 'BATON_SCRIPT_TIME_BUDGET_MS', DEFAULT_SCRIPT_BUDGET.timeMs, 1),
      memoryMb: int(env, 'BATON_SCRIPT_MEMORY_MB', DEFAULT_SCRIPT_BUDGET.memoryMb, 4),
    },
  };
}
