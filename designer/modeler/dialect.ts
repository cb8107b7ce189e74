// Which engine's extension attributes a diagram is written for. The properties panel edits
// that dialect only: a Camunda 7 file keeps camunda: attributes, a Zeebe file zeebe: ones.

export type Dialect = 'camunda7' | 'zeebe';

export const DIALECTS: Record<Dialect, string> = { camunda7: 'Camunda 7', zeebe: 'Zeebe (Camunda 8)' };

const ZEEBE_NAMESPACE = 'http://camunda.org/schema/zeebe/1.0';

/** Zeebe when the file declares the zeebe namespace or Camunda Modeler's "Camunda Cloud" platform; Camunda 7 otherwise. */
export function diagramDialect(xml: string): Dialect {
  if (xml.includes(ZEEBE_NAMESPACE) || /executionPlatform="Camunda Cloud"/.test(xml)) return 'zeebe';
  return 'camunda7';
}
