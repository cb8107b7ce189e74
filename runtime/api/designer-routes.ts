// The designer's API (drafts, lint, heatmap) and the built designer app itself at `/`.
import path from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { Router, type RequestHandler } from 'express';
import type { Engine } from '../engine/context.ts';
import { diagramsRouter } from './diagrams-routes.ts';
import { lintRouter } from './lint-routes.ts';

export const designerDistDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../designer/dist');

/** Mounted at /api after the core routers. */
export function designerApiRouter(engine: Engine): Router {
  const router = Router();
  router.use('/diagrams', diagramsRouter(engine));
  router.use('/definitions', lintRouter(engine));
  return router;
}

/** Serves designer/dist; file names under assets/ carry a content hash, so they are cached for good. */
export function designerStatic(distDir = designerDistDir): Router {
  const router = Router();
  const serveFiles = express.static(distDir, {
    index: 'index.html',
    setHeaders(res, file) {
      res.setHeader(
        'cache-control',
        file.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    },
  });
  const notBuilt: RequestHandler = (req, res, next) => {
    if (req.method !== 'GET' || req.path !== '/' || existsSync(path.join(distDir, 'index.html'))) return next();
    res
      .status(503)
      .type('text/plain')
      .send('The designer is not built yet: run `npm run build:designer` (npm start does it when designer/dist is missing).\n');
  };
  router.use(notBuilt, serveFiles);
  return router;
}
