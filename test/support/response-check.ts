// Checks the server's real answers against the OpenAPI documents: test/support/server.ts's
// apiClient and test/camunda/support.ts's engineRest call checkResponse on every answer, so
// every test that uses them also checks that the route, its status and its JSON are documented.
// BATON_RESPONSE_CHECK=off turns it off (e.g. while changing a view and its schema together);
// BATON_RESPONSE_REPORT=<file> appends `operationId status` per checked answer, to see what the suite covers.
import { appendFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { buildCamundaOpenApiDocument, buildOpenApiDocument } from '../../runtime/ops/openapi.ts';

type Json = Record<string, any>;

const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;

interface DocumentedRoute {
  method: string;
  template: string;
  pattern: RegExp;
  params: number;
  operationId: string;
  responses: Record<string, Json>;
  docId: string;
}

let routes: DocumentedRoute[] | undefined;
let ajv: Ajv | undefined;
const validators = new Map<string, ValidateFunction>();

function load(): DocumentedRoute[] {
  if (routes) return routes;
  // Not strict: the documents carry OpenAPI keywords (components, paths) ajv does not know.
  ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  routes = [];
  for (const [docId, doc] of [
    ['https://baton.test/openapi.json', buildOpenApiDocument()],
    ['https://baton.test/openapi-camunda.json', buildCamundaOpenApiDocument()],
  ] as const) {
    ajv.addSchema({ $id: docId, components: (doc as Json).components }, docId);
    for (const [template, item] of Object.entries((doc as Json).paths as Record<string, Json>))
      for (const [method, op] of Object.entries(item)) {
        const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+');
        routes.push({
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${source}/?$`, 'i'),
          params: (template.match(/\{/g) ?? []).length,
          operationId: op.operationId as string,
          responses: op.responses as Record<string, Json>,
          docId,
        });
      }
  }
  return routes;
}

/** The documented operation of a concrete call: literal segments win over parameters (`/task/count` over `/task/{id}`). */
function findRoute(method: string, path: string): DocumentedRoute | undefined {
  const pathOnly = path.split('?')[0] ?? path;
  return load()
    .filter((r) => r.method === method.toUpperCase() && r.pattern.test(pathOnly))
    .sort((a, b) => a.params - b.params)[0];
}

// `#/components/...` inside the document -> the document's id, so ajv resolves it from any schema.
function anchorRefs(node: unknown, docId: string): unknown {
  if (Array.isArray(node)) return node.map((n) => anchorRefs(n, docId));
  if (!node || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node as Json).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' && v.startsWith('#') ? `${docId}${v}` : anchorRefs(v, docId),
    ]),
  );
}

function validatorFor(route: DocumentedRoute, status: string, schema: Json): ValidateFunction {
  const key = `${route.docId} ${route.method} ${route.template} ${status}`;
  let fn = validators.get(key);
  if (!fn) {
    fn = ajv!.compile(anchorRefs(schema, route.docId) as Json);
    validators.set(key, fn);
  }
  return fn;
}

function schemaName(schema: Json): string {
  return typeof schema.$ref === 'string' ? schema.$ref.replace('#/components/schemas/', '') : 'inline schema';
}

export interface CheckedAnswer {
  method: string;
  /** the path as called, query string included */
  path: string;
  status: number;
  contentType: string | null;
  /** the parsed JSON, or the text when it is not JSON; undefined when empty */
  body: unknown;
}

/** Throws when the answer's status is not documented for its route, or its JSON does not match the status's schema. */
export function checkResponse(answer: CheckedAnswer): void {
  if (process.env.BATON_RESPONSE_CHECK === 'off') return;
  const route = findRoute(answer.method, answer.path);
  if (!route) return; // unknown routes (404 tests, the designer's files) are not in the documents
  if (process.env.BATON_RESPONSE_REPORT)
    appendFileSync(process.env.BATON_RESPONSE_REPORT, `${route.operationId} ${answer.status}\n`);
  const where = `${answer.method} ${answer.path} (${route.operationId}, ${route.template})`;
  const status = String(answer.status);
  const documented = route.responses[status] ?? route.responses[`${status[0]}XX`] ?? route.responses.default;
  const excerpt = () => JSON.stringify(answer.body)?.slice(0, 600);
  if (!documented) throw new Error(`Undocumented status ${status} of ${where}: ${excerpt()}`);
  const content = documented.content as Record<string, Json> | undefined;
  const isJson = /^application\/json\b/i.test(answer.contentType ?? '');
  if (!content) {
    if (answer.body !== undefined)
      throw new Error(`${where} answered ${status} with a body its document does not describe: ${excerpt()}`);
    return;
  }
  const json = content['application/json'];
  if (!json) return; // documented as text or bytes
  if (!isJson)
    throw new Error(`${where} answered ${status} as ${answer.contentType ?? 'nothing'}, documented as application/json`);
  if (!json.schema) return;
  const fn = validatorFor(route, status, json.schema as Json);
  if (!fn(answer.body)) {
    const errors = (fn.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
    throw new Error(
      `Answer ${status} of ${where} does not match ${schemaName(json.schema as Json)}:\n  ${errors.join('\n  ')}\nbody: ${excerpt()}`,
    );
  }
}
