// An OpenAPI 3.1 document from an operation table and a folder of JSON Schema files: the
// native document (schemas/api, openapi-routes.ts) and the Camunda one (schemas/camunda,
// openapi-camunda-routes.ts) are built the same way, so both name their schemas by file.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type Json = Record<string, unknown>;

/** One answer of an operation: a schema file's name (without .schema.json), or a schema inline. */
export interface ResponseSpec {
  description: string;
  schema?: string | Json;
  /** application/json unless named */
  contentType?: string;
}

export interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  /** camelCase, unique across both documents */
  operationId: string;
  summary: string;
  /** required roles when tokens are configured; 'open' when none is needed */
  roles: string;
  /** the JSON request body's schema file */
  body?: string;
  /** the body may also be the BPMN file itself (application/xml or text/xml) */
  xmlBody?: boolean;
  /** a request body described inline (e.g. a multipart form) */
  bodyContent?: Json;
  /** the query string's schema file */
  query?: string;
  /** every success status the route answers; errors are added from the document's error schema */
  responses: Record<number, ResponseSpec>;
}

export interface DocumentSpec {
  title: string;
  description: string;
  /** folder under schemas/ */
  schemaFolder: 'api' | 'camunda';
  operations: readonly Operation[];
  /** the schema file every 4xx and 5xx answer follows */
  errorSchema: string;
  securitySchemes: Json;
}

const schemasRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schemas');

// `common.schema.json#/definitions/key` -> `#/components/schemas/common.key`.
function rewriteRefs(node: unknown, file: string): unknown {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, file));
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === '$ref' && typeof v === 'string') {
      const [target = '', pointer = ''] = v.split('#');
      const name = target ? target.replace(/^.*\//, '').replace(/\.schema\.json$/, '') : file;
      const def = /^\/(?:definitions|\$defs)\/(.+)$/.exec(pointer)?.[1];
      out[k] = `#/components/schemas/${def ? `${name}.${def}` : name}`;
    } else out[k] = rewriteRefs(v, file);
  }
  return out;
}

export function loadComponentSchemas(folder: DocumentSpec['schemaFolder'] = 'api'): Record<string, Json> {
  const dir = path.join(schemasRoot, folder);
  const schemas: Record<string, Json> = {};
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.schema.json'))
    .sort()) {
    const name = file.replace(/\.schema\.json$/, '');
    const { $schema: _s, $id: _i, definitions, $defs, ...body } = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Json;
    for (const [def, schema] of Object.entries({ ...(definitions as Json), ...($defs as Json) }))
      schemas[`${name}.${def}`] = rewriteRefs(schema, name) as Json;
    if (body.type || body.properties || body.anyOf || body.oneOf || body.$ref) schemas[name] = rewriteRefs(body, name) as Json;
  }
  return schemas;
}

const schemaRef = (schema: string | Json): Json =>
  typeof schema === 'string' ? { $ref: `#/components/schemas/${schema}` } : schema;

function queryParameters(schema: Json | undefined): Json[] {
  const props = (schema?.properties ?? {}) as Record<string, Json>;
  return Object.entries(props).map(([name, s]) => ({ name, in: 'query', required: false, schema: s }));
}

// With the BPMN file as the body, deploy's options come as query parameters (api/definitions-routes.ts).
const XML_BODY_OPTIONS: Json[] = [
  {
    name: 'processId',
    in: 'query',
    required: false,
    description: 'with an XML body: the process to deploy',
    schema: { type: 'string' },
  },
  {
    name: 'javaTasksAsTopics',
    in: 'query',
    required: false,
    description: 'with an XML body: Java-bound tasks become external tasks',
    schema: { type: 'boolean' },
  },
];

function requestBody(op: Operation): Json | undefined {
  if (op.bodyContent) return { required: true, content: op.bodyContent };
  if (!op.body) return undefined;
  const content: Json = { 'application/json': { schema: schemaRef(op.body) } };
  const bpmn = { schema: { type: 'string', description: 'the BPMN file' } };
  if (op.xmlBody) Object.assign(content, { 'application/xml': bpmn, 'text/xml': bpmn });
  return { required: true, content };
}

function describeOperation(op: Operation, spec: DocumentSpec, schemas: Record<string, Json>): Json {
  const pathParams = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const error = { description: 'Error', content: { 'application/json': { schema: schemaRef(spec.errorSchema) } } };
  const responses: Json = {};
  for (const [status, r] of Object.entries(op.responses))
    responses[status] = {
      description: r.description,
      ...(r.schema || r.contentType
        ? { content: { [r.contentType ?? 'application/json']: r.schema ? { schema: schemaRef(r.schema) } : {} } }
        : {}),
    };
  const body = requestBody(op);
  return {
    operationId: op.operationId,
    summary: op.summary,
    description: `Roles: ${op.roles}.`,
    ...(op.roles === 'open' ? { security: [] } : {}),
    parameters: [
      ...pathParams,
      ...queryParameters(op.query ? schemas[op.query] : undefined),
      ...(op.xmlBody ? XML_BODY_OPTIONS : []),
    ],
    ...(body ? { requestBody: body } : {}),
    responses: { ...responses, '4XX': error, '5XX': error },
  };
}

export function buildDocument(spec: DocumentSpec): Json {
  const schemas = loadComponentSchemas(spec.schemaFolder);
  const paths: Record<string, Json> = {};
  for (const op of spec.operations) (paths[op.path] ??= {})[op.method] = describeOperation(op, spec, schemas);
  return {
    openapi: '3.1.0',
    info: { title: spec.title, version: '0.1.0', description: spec.description },
    jsonSchemaDialect: 'http://json-schema.org/draft-07/schema#',
    servers: [{ url: '/' }],
    security: Object.keys(spec.securitySchemes).map((name) => ({ [name]: [] })),
    paths,
    components: { schemas, securitySchemes: spec.securitySchemes },
  };
}
