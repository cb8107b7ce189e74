// GET /api/openapi.json: an OpenAPI 3.1 document built from schemas/api/*.schema.json
// (the schemas the server validates with) and the operation table of openapi-routes.ts.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Router } from 'express';
import { OPERATIONS, type Operation } from './openapi-routes.ts';

const schemaDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schemas/api');
type Json = Record<string, unknown>;

// `common.schema.json#/definitions/key` -> `#/components/schemas/common.key`.
function rewriteRefs(node: unknown, file: string): unknown {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, file));
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === '$ref' && typeof v === 'string') {
      const [target = '', pointer = ''] = v.split('#');
      const name = target ? target.replace(/\.schema\.json$/, '') : file;
      const def = /^\/definitions\/(.+)$/.exec(pointer)?.[1];
      out[k] = `#/components/schemas/${def ? `${name}.${def}` : name}`;
    } else out[k] = rewriteRefs(v, file);
  }
  return out;
}

export function loadComponentSchemas(): Record<string, Json> {
  const schemas: Record<string, Json> = {};
  for (const file of readdirSync(schemaDir)
    .filter((f) => f.endsWith('.schema.json'))
    .sort()) {
    const name = file.replace(/\.schema\.json$/, '');
    const { $schema: _s, $id: _i, definitions, ...body } = JSON.parse(readFileSync(path.join(schemaDir, file), 'utf8')) as Json;
    for (const [def, schema] of Object.entries((definitions ?? {}) as Json))
      schemas[`${name}.${def}`] = rewriteRefs(schema, name) as Json;
    if (body.type || body.properties || body.anyOf || body.oneOf) schemas[name] = rewriteRefs(body, name) as Json;
  }
  return schemas;
}

function queryParameters(schema: Json | undefined): Json[] {
  const props = (schema?.properties ?? {}) as Record<string, Json>;
  return Object.entries(props).map(([name, s]) => ({ name, in: 'query', required: false, schema: s }));
}

function describeOperation(op: Operation, schemas: Record<string, Json>): Json {
  const pathParams = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const content: Json = op.body ? { 'application/json': { schema: { $ref: `#/components/schemas/${op.body}` } } } : {};
  if (op.xmlBody) content['application/xml'] = { schema: { type: 'string', description: 'the BPMN file' } };
  const error = {
    description: 'Error',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/common.error' } } },
  };
  return {
    summary: op.summary,
    description: `Roles: ${op.roles}.`,
    ...(op.roles === 'open' ? { security: [] } : {}),
    parameters: [...pathParams, ...queryParameters(op.query ? schemas[op.query] : undefined)],
    ...(op.body ? { requestBody: { required: true, content } } : {}),
    responses: { [String(op.success[0])]: { description: op.success[1] }, '4XX': error, '5XX': error },
  };
}

export function buildOpenApiDocument(): Json {
  const schemas = loadComponentSchemas();
  const paths: Record<string, Json> = {};
  for (const op of OPERATIONS) (paths[op.path] ??= {})[op.method] = describeOperation(op, schemas);
  return {
    openapi: '3.1.0',
    info: { title: 'Baton native API', version: '0.1.0', description: 'See docs/api.md. Errors are {type, message, details?}.' },
    jsonSchemaDialect: 'http://json-schema.org/draft-07/schema#',
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A token from BATON_TOKENS or `baton token create`' },
      },
    },
  };
}

export function openApiRouter(): Router {
  const router = Router();
  const document = buildOpenApiDocument();
  router.get('/api/openapi.json', (_req, res) => {
    res.json(document);
  });
  return router;
}
