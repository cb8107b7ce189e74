// Security headers for the designer's pages. The API answers JSON only and sends no
// CORS headers, so browsers on other origins cannot read it (CORS is off).
import helmet from 'helmet';
import type { RequestHandler } from 'express';

export function designerHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      directives: {
        'default-src': ["'self'"],
        'script-src': ["'self'"],
        // bpmn-js sets inline styles on the canvas and draws markers from data: URLs.
        'style-src': ["'self'", "'unsafe-inline'"],
        'img-src': ["'self'", 'data:', 'blob:'],
        'font-src': ["'self'", 'data:'],
        'connect-src': ["'self'", 'ws:', 'wss:'],
        'object-src': ["'none'"],
        'frame-ancestors': ["'none'"],
        'base-uri': ["'self'"],
        // Baton is often served over plain HTTP inside a network: upgrading would break the designer's own calls.
        'upgrade-insecure-requests': null,
      },
    },
  });
}
