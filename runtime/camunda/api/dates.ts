// Camunda's REST date format yyyy-MM-dd'T'HH:mm:ss.SSSZ, e.g. 2024-05-01T12:00:00.000+0000.

const CAMUNDA_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$/;

/** Always UTC, as Camunda's default format with the zone as +0000. */
export function formatCamundaDate(value: Date | string | null): string | null {
  if (value === null) return null;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString().replace(/Z$/, '+0000');
}

/** Accepts Camunda's format and ISO-8601 with Z or an offset; undefined when neither. */
export function parseCamundaDate(text: string): Date | undefined {
  if (!CAMUNDA_DATE.test(text)) return undefined;
  // JavaScript rolls 2024-02-31 over to March 2: refuse days the month does not have.
  const [y, m, d] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  const calendar = new Date(Date.UTC(y, m - 1, d));
  if (calendar.getUTCMonth() !== m - 1 || calendar.getUTCDate() !== d) return undefined;
  const date = new Date(text.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(date.getTime()) ? undefined : date;
}
