// GET /api/openapi.json and GET /api/openapi-camunda.json: OpenAPI 3.1 documents built from
// schemas/api and schemas/camunda (the schemas the server validates requests with, and the
// answer schemas the test suite checks every answer against) and the operation tables.
import { Router } from 'express';
import { CAMUNDA_OPERATIONS } from './openapi-camunda-routes.ts';
import { buildDocument, type Json } from './openapi-document.ts';
import { OPERATIONS } from './openapi-routes.ts';

export function buildOpenApiDocument(): Json {
  return buildDocument({
    title: 'Baton native API',
    description:
      'See docs/api.md. Errors are {type, message, details?}. The Camunda 7 compatible /engine-rest API has its own document: /api/openapi-camunda.json.',
    schemaFolder: 'api',
    operations: OPERATIONS,
    errorSchema: 'error',
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: 'A token from BATON_TOKENS or `baton token create`' },
    },
  });
}

export function buildCamundaOpenApiDocument(): Json {
  return buildDocument({
    title: 'Baton Camunda 7 compatible REST API (/engine-rest)',
    description:
      'The subset of Camunda 7 REST that Baton serves; see docs/camunda-compatibility.md. Errors are {type, message, code?} as Camunda answers them.',
    schemaFolder: 'camunda',
    operations: CAMUNDA_OPERATIONS,
    errorSchema: 'error',
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: 'A token from BATON_TOKENS or `baton token create`' },
      basic: {
        type: 'http',
        scheme: 'basic',
        description: "Any user name and the token as password (the Camunda client's BasicAuthInterceptor)",
      },
    },
  });
}

export function openApiRouter(): Router {
  const router = Router();
  const native = buildOpenApiDocument();
  const camunda = buildCamundaOpenApiDocument();
  router.get('/api/openapi.json', (_req, res) => {
    res.json(native);
  });
  router.get('/api/openapi-camunda.json', (_req, res) => {
    res.json(camunda);
  });
  return router;
}
