// /api/me: who the presented token names, for a tasklist's "signed in as" and its filters.
import { Router } from 'express';
import type { Caller } from '../security/auth.ts';

export function meRouter(): Router {
  const router = Router();
  router.get('/', (_req, res) => {
    const caller = res.locals.caller as Caller | undefined;
    // Without a caller the server is open (loopback, no token exists): nobody needs to sign in.
    res.json(
      caller
        ? { name: caller.name, role: caller.role, groups: caller.groups, tokensRequired: true }
        : { name: null, role: null, groups: [], tokensRequired: false },
    );
  });
  return router;
}
