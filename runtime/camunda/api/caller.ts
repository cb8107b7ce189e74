// Who made a request: the token's name the security layer put on the response, for the history.
import type { Response } from 'express';
import type { Caller } from '../../security/auth.ts';

export function callerName(res: Response): string | undefined {
  return (res.locals.caller as Caller | undefined)?.name;
}
