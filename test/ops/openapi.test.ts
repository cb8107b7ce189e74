// GET /api/openapi.json and /api/openapi-camunda.json: OpenAPI 3.1 built from schemas/api and
// schemas/camunda, covering every route the routers declare. The answers themselves are checked
// against these documents by every test that calls through apiClient or engineRest (test/support/response-check.ts).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { OPERATIONS } from '../../runtime/ops/openapi-routes.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { declaredRoutes } from '../security/routes.ts';

const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;
const root = path.resolve(import.meta.dirname, '../..');

let t: TestServer;
let doc: any;
let camunda: any;
beforeAll(async () => {
  t = await startTestServer();
  doc = (await t.api.get('/api/openapi.json')).body;
  camunda = (await t.api.get('/api/openapi-camunda.json')).body;
});
afterAll(async () => t?.close());

function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refs(n, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node))
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
  }
  return out;
}

describe('openapi.json', () => {
  it('is OpenAPI 3.1 with bearer security and every request schema of schemas/api', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['start-instance-request', 'fetch-and-lock-request', 'common.key']),
    );
    expect(doc.paths['/api/instances'].post.requestBody.content['application/json'].schema.$ref).toBe(
      '#/components/schemas/start-instance-request',
    );
    expect(doc.paths['/readyz'].get.security).toEqual([]);
  });

  it('resolves every $ref inside both documents', () => {
    for (const d of [doc, camunda]) {
      const missing = refs(d).filter((r) => !(r.replace('#/components/schemas/', '') in d.components.schemas));
      expect(missing).toEqual([]);
    }
  });

  it('describes every route the routers declare, native in one document and /engine-rest in the other', () => {
    const absent = declaredRoutes(root)
      .filter((r) => {
        const d = r.path.startsWith('/engine-rest') ? camunda : doc;
        return !d.paths[r.path.replace(/:(\w+)/g, '{$1}')]?.[r.method.toLowerCase()];
      })
      .map((r) => `${r.method} ${r.path}`);
    expect(absent).toEqual([]);
  });

  it('gives every operation a unique camelCase operationId and a schema for every success answer with a body', () => {
    const ids: string[] = [];
    const missing: string[] = [];
    for (const d of [doc, camunda])
      for (const [p, item] of Object.entries<any>(d.paths))
        for (const [method, op] of Object.entries<any>(item)) {
          ids.push(op.operationId);
          const success = Object.keys(op.responses).filter((s) => /^2\d\d$/.test(s));
          if (success.length === 0) missing.push(`${method} ${p}: no success status`);
          for (const status of success.filter((s) => s !== '204')) {
            const content = op.responses[status].content ?? {};
            if (!Object.values<any>(content).some((c) => c.schema || !('application/json' in content)))
              missing.push(`${method} ${p} ${status}: no schema`);
          }
          for (const status of ['4XX', '5XX'])
            if (!op.responses[status]?.content?.['application/json']?.schema)
              missing.push(`${method} ${p} ${status}: no error schema`);
        }
    expect(missing).toEqual([]);
    expect(ids.filter((id) => !/^[a-z][a-zA-Z0-9]*$/.test(id))).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it('documents every success status a route can answer, and the BPMN file as a deploy body', () => {
    expect(Object.keys(doc.paths['/api/definitions'].post.responses)).toEqual(expect.arrayContaining(['200', '201']));
    expect(Object.keys(doc.paths['/api/instances'].post.responses)).toEqual(expect.arrayContaining(['200', '201']));
    expect(Object.keys(doc.paths['/api/messages'].post.responses)).toEqual(expect.arrayContaining(['200', '201', '202']));
    expect(doc.paths['/api/external-tasks/{id}/progress'].post.responses['202'].content['application/json'].schema.$ref).toBe(
      '#/components/schemas/progress-accepted',
    );
    expect(Object.keys(doc.paths['/api/definitions'].post.requestBody.content)).toEqual(
      expect.arrayContaining(['application/json', 'application/xml', 'text/xml']),
    );
    expect(camunda.paths['/engine-rest/external-task/{id}/complete'].post.responses['204']).toBeDefined();
    expect(
      camunda.paths['/engine-rest/external-task/fetchAndLock'].post.responses['200'].content['application/json'].schema.$ref,
    ).toBe('#/components/schemas/locked-external-task-list');
  });

  it('compiles every schema file in the ajv settings the server validates requests with', () => {
    // runtime/shared/validate.ts and runtime/camunda/api/validate.ts load every file of their folder.
    for (const [folder, options] of [
      ['api', { allErrors: true, strict: true }],
      ['camunda', { allErrors: true, strict: true, allowUnionTypes: true }],
    ] as const) {
      const ajv = new Ajv(options);
      addFormats(ajv);
      const dir = path.join(root, 'schemas', folder);
      const files = readdirSync(dir).filter((f) => f.endsWith('.schema.json'));
      const schemas = files.map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')));
      for (const schema of schemas) ajv.addSchema(schema);
      for (const schema of schemas) expect(() => ajv.getSchema(schema.$id), `${folder}/${schema.$id}`).not.toThrow();
    }
  });

  it('docs/api.md lists every operation with its roles', () => {
    const doc = readFileSync(path.join(root, 'docs/api.md'), 'utf8');
    const absent = OPERATIONS.filter(
      (o) => !doc.includes(`| ${o.method.toUpperCase()} | \`${o.path.replace(/\{(\w+)\}/g, ':$1')}\` | ${o.roles} |`),
    );
    expect(absent.map((o) => `${o.method} ${o.path}`)).toEqual([]);
  });
});
