// Lint and deploy of one BPMN file (or one process of it) through the HTTP API, and what
// differs between the two answers: the designer's problems must be exactly the deploy's refusals.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ApiClient } from './server.ts';

export interface BpmnCase {
  /** file path relative to the folder, with `#processId` when the file holds several executable processes */
  label: string;
  xml: string;
  processId?: string;
}

export interface Diagnostic {
  elementId: string;
  message: string;
  severity: 'error' | 'warning';
}

export interface LintDeployResult {
  case: BpmnCase;
  /** deploy's answer when it stored the definition */
  deployed?: { key: string; version: number; fingerprint: string };
  /** what deploy refused with (400 CompileError details), empty when it deployed */
  errors: Diagnostic[];
  /** how the lint answer differs from the deploy answer; undefined when they agree */
  disagreement?: string;
  lint: unknown;
  deploy: { status: number; body: unknown };
}

/** Lint warnings deploy cannot give: they depend on workers and templates, and never refuse (api/lint-routes.ts). */
const SERVER_ONLY_WARNINGS = new Set(['topic-without-worker']);

/** Every .bpmn file under `dir` (one level of folders), sorted; a file with several executable processes gives one case per process. */
export function bpmnCases(dir: string): BpmnCase[] {
  const files = readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? readdirSync(path.join(dir, entry.name))
          .filter((f) => f.endsWith('.bpmn'))
          .map((f) => `${entry.name}/${f}`)
      : entry.name.endsWith('.bpmn')
        ? [entry.name]
        : [],
  );
  return files.sort().flatMap((file) => {
    const xml = readFileSync(path.join(dir, file), 'utf8');
    const processes = executableProcessIds(xml);
    return processes.length > 1
      ? processes.map((processId) => ({ label: `${file}#${processId}`, xml, processId }))
      : [{ label: file, xml }];
  });
}

/** Ids of the processes of the file that are not marked isExecutable="false" and are not empty (`<process/>`). */
export function executableProcessIds(xml: string): string[] {
  return [...xml.matchAll(/<(?:[\w-]+:)?process\b([^>]*?)(\/?)>/g)]
    .filter((m) => m[2] !== '/' && !/\sisExecutable="false"/.test(m[1] ?? ''))
    .map((m) => /\sid="([^"]+)"/.exec(m[1] ?? '')?.[1])
    .filter((id): id is string => id !== undefined);
}

/** POST /api/definitions/lint, then POST /api/definitions with the same body, and how the answers differ. */
export async function lintThenDeploy(api: ApiClient, c: BpmnCase): Promise<LintDeployResult> {
  const body = { xml: c.xml, ...(c.processId ? { processId: c.processId } : {}) };
  const lint = await api.post('/api/definitions/lint', body);
  const deploy = await api.post('/api/definitions', body);
  const accepted = deploy.status === 200 || deploy.status === 201;
  const errors: Diagnostic[] = accepted ? [] : ((deploy.body?.details as Diagnostic[] | undefined) ?? []);
  return {
    case: c,
    ...(accepted
      ? { deployed: { key: deploy.body.key, version: deploy.body.version, fingerprint: deploy.body.fingerprint } }
      : {}),
    errors,
    disagreement: disagreement(lint, deploy),
    lint: lint.body,
    deploy: { status: deploy.status, body: deploy.body },
  };
}

function disagreement(lint: { status: number; body: any }, deploy: { status: number; body: any }): string | undefined {
  if (lint.status !== 200) return `lint answered ${lint.status} ${JSON.stringify(lint.body)}`;
  const accepted = deploy.status === 200 || deploy.status === 201;
  if (!accepted && (deploy.status !== 400 || deploy.body?.type !== 'CompileError'))
    return `deploy answered ${deploy.status} ${JSON.stringify(deploy.body)}`;
  if (lint.body.ok !== accepted)
    return `lint says ok=${lint.body.ok} ${JSON.stringify(lint.body.diagnostics)}, deploy answered ${deploy.status} ${JSON.stringify(deploy.body.details ?? deploy.body.warnings)}`;
  if (!accepted) {
    const same = JSON.stringify(plain(lint.body.diagnostics)) === JSON.stringify(plain(deploy.body.details));
    return same
      ? undefined
      : `lint diagnostics ${JSON.stringify(lint.body.diagnostics)} differ from deploy's ${JSON.stringify(deploy.body.details)}`;
  }
  const lintWarnings = (lint.body.warnings as (Diagnostic & { code?: string })[]).filter(
    (w) => !SERVER_ONLY_WARNINGS.has(w.code ?? ''),
  );
  if (JSON.stringify(plain(lintWarnings)) !== JSON.stringify(plain(deploy.body.warnings)))
    return `lint warnings ${JSON.stringify(lintWarnings)} differ from deploy's ${JSON.stringify(deploy.body.warnings)}`;
  if (lint.body.processKey !== deploy.body.key || lint.body.fingerprint !== deploy.body.fingerprint)
    return `lint compiled ${lint.body.processKey} ${lint.body.fingerprint}, deploy stored ${deploy.body.key} ${deploy.body.fingerprint}`;
  return undefined;
}

function plain(diagnostics: Diagnostic[] | undefined): Diagnostic[] {
  return (diagnostics ?? []).map(({ elementId, message, severity }) => ({ elementId, message, severity }));
}

/** Whether `elementId` is an id of the file (or the `definitions` a parse failure names). */
export function namesElementOf(xml: string, elementId: string): boolean {
  return elementId === 'definitions' || xml.includes(`id="${elementId}"`);
}
