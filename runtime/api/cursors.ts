// Keyset cursors of the lists paged newest first: a cursor names the last row of a page by its
// creation time (microseconds, which a JavaScript Date would drop) and its id.
import { BatonError } from '../shared/errors.ts';
import { isUuid } from '../shared/validate.ts';

export function writeCursor(createdUs: string, id: string): string {
  return Buffer.from(`${createdUs}|${id}`).toString('base64url');
}

export function readCursor(cursor: string): { createdUs: string; id: string } {
  const [createdUs, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdUs || !id || !/^\d{1,17}$/.test(createdUs) || !isUuid(id))
    throw new BatonError('validation', `Invalid query: cursor "${cursor}" is not a nextCursor this API gave`);
  return { createdUs, id };
}
