// A logger for the worker SDK that keeps its records, so tests can wait on events.
import type { WorkerLogger } from '../../runtime/worker/index.ts';

export interface LogRecord {
  level: 'debug' | 'info' | 'warn' | 'error';
  event: string;
  fields: Record<string, unknown>;
  /** Date.now() when it was logged */
  at: number;
}

export function recordingLogger(): WorkerLogger & { records: LogRecord[]; count(event: string): number } {
  const records: LogRecord[] = [];
  const at = (level: LogRecord['level']) => (fields: object, event: string) => {
    records.push({ level, event, fields: fields as Record<string, unknown>, at: Date.now() });
  };
  return {
    records,
    count: (event) => records.filter((r) => r.event === event).length,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
}
