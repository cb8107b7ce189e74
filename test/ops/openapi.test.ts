// GET /api/openapi.json: OpenAPI 3.1 built from schemas/api, covering every native route.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { OPERATIONS } from '../../runtime/ops/openapi-routes.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { declaredRoutes } from '../security/routes.ts';

let t: TestServer;
let doc: any;
beforeAll(async () => {
  t = await startTestServer();
  doc = (await t.api.get('/api/openapi.json')).body;
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

  it('resolves every $ref inside the document', () => {
    const missing = refs(doc).filter((r) => !(r.replace('#/components/schemas/', '') in doc.components.schemas));
    expect(missing).toEqual([]);
  });

  it('describes every route the native routers declare', () => {
    const native = declaredRoutes(path.resolve(import.meta.dirname, '../..')).filter((r) => !r.path.startsWith('/engine-rest'));
    const absent = native
      .filter((r) => !doc.paths[r.path.replace(/:(\w+)/g, '{$1}')]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.path}`);
    expect(absent).toEqual([]);
  });

  it('docs/api.md lists every operation with its roles', () => {
    const doc = readFileSync(path.resolve(import.meta.dirname, '../../docs/api.md'), 'utf8');
    const absent = OPERATIONS.filter(
      (o) => !doc.includes(`| ${o.method.toUpperCase()} | \`${o.path.replace(/\{(\w+)\}/g, ':$1')}\` | ${o.roles} |`),
    );
    expect(absent.map((o) => `${o.method} ${o.path}`)).toEqual([]);
  });
});
