// Camunda 7 query parameters, read alike from a query string (every value text) and a JSON
// body (typed values): flags, integers, name lists and sorting, each refused with a reason.
import { parseCamundaDate } from './dates.ts';
import { invalidRequest } from './errors.ts';

export type Source = Record<string, unknown>;

/** Parameters Camunda defines that Baton cannot answer: refused when they would filter (an empty list is what clients send by default). */
export function refuseUnsupported(input: Source, names: readonly string[], what: string): void {
  for (const name of names) {
    const v = input[name];
    if (v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0))
      throw invalidRequest(`Baton does not support the ${what} query parameter '${name}' (see docs/camunda-compatibility.md)`);
  }
}

/** Paging: firstResult and maxResults (at most 10,000), from the query string as Camunda takes them. */
export function readPaging(query: Source): { firstResult: number; maxResults: number } {
  const firstResult = readInt(query, 'firstResult', 'query') ?? 0;
  const maxResults = Math.min(readInt(query, 'maxResults', 'query') ?? 1000, 10_000);
  if (firstResult < 0 || maxResults < 0) throw invalidRequest('firstResult and maxResults must not be negative');
  return { firstResult, maxResults };
}

/** `sortBy`/`sortOrder` (query string) or `sorting: [{sortBy, sortOrder}]` (body), each key one of `keys`. */
export function readSorting<K extends string>(
  input: Source,
  from: 'query' | 'body',
  keys: Record<K, string>,
  what: string,
): { sortBy: K; sortOrder: 'asc' | 'desc' }[] {
  const raw =
    from === 'query'
      ? input.sortBy === undefined
        ? []
        : [{ sortBy: input.sortBy, sortOrder: input.sortOrder }]
      : Array.isArray(input.sorting)
        ? (input.sorting as unknown[])
        : input.sorting === undefined || input.sorting === null
          ? []
          : undefined;
  if (raw === undefined) throw invalidRequest('sorting must be a list of {sortBy, sortOrder}');
  if (from === 'query' && input.sortBy === undefined && input.sortOrder !== undefined)
    throw invalidRequest('Only a single sorting parameter specified. sortBy and sortOrder required');
  return raw.slice(0, 10).map((s) => {
    const { sortBy, sortOrder } = (s ?? {}) as { sortBy?: unknown; sortOrder?: unknown };
    if (typeof sortBy !== 'string' || !Object.hasOwn(keys, sortBy))
      throw invalidRequest(
        `Cannot sort by '${String(sortBy)}': Baton sorts ${what} by ${Object.keys(keys).join(', ')} (see docs/camunda-compatibility.md)`,
      );
    if (sortOrder !== 'asc' && sortOrder !== 'desc')
      throw invalidRequest(`sortOrder must be asc or desc, got '${String(sortOrder)}'`);
    return { sortBy: sortBy as K, sortOrder };
  });
}

export function readFlag(input: Source, name: string, from: 'query' | 'body'): boolean {
  const v = input[name];
  if (v === undefined || v === null) return false;
  if (from === 'body' ? typeof v === 'boolean' : v === 'true' || v === 'false') return v === true || v === 'true';
  throw invalidRequest(`Parameter ${name} must be true or false`);
}

export function readInt(input: Source, name: string, from: 'query' | 'body'): number | undefined {
  const v = input[name];
  if (v === undefined || v === null) return undefined;
  if (from === 'body' && typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 1e9) return v;
  if (typeof v === 'string' && /^-?\d{1,9}$/.test(v)) return Number(v);
  throw invalidRequest(`Parameter ${name} must be an integer`);
}

export function readNames(input: Source, name: string, from: 'query' | 'body'): string[] {
  const v = input[name];
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? v.split(',') : from === 'body' && Array.isArray(v) ? v : undefined;
  if (!list || list.some((n) => typeof n !== 'string' || n.length > 200))
    throw invalidRequest(`Parameter ${name} must be a list of names`);
  return (list as string[]).map((n) => n.trim()).filter((n) => n !== '');
}

/** A query in a POST body: a JSON object, or nothing. */
export function bodyObject(body: unknown): Source {
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalidRequest('The request body must be a JSON object');
  return body as Source;
}

/** A text parameter: undefined when absent, refused when not text. */
export function readText(input: Source, name: string, maxLength = 1000): string | undefined {
  const v = input[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > maxLength)
    throw invalidRequest(`Parameter ${name} must be text of at most ${maxLength} characters`);
  return v;
}

/** A date parameter in Camunda's format (or ISO-8601 with a zone): undefined when absent. */
export function readDate(input: Source, name: string): Date | undefined {
  const v = input[name];
  if (v === undefined || v === null) return undefined;
  const date = typeof v === 'string' ? parseCamundaDate(v) : undefined;
  if (!date)
    throw invalidRequest(`Cannot set query parameter '${name}' to value '${String(v)}': not a date (yyyy-MM-dd'T'HH:mm:ss.SSSZ)`);
  return date;
}
