// pino redaction: should a token, an Authorization header or variables ever reach a log
// record (an error carrying a request, a future debug line), they are censored.
import type { LoggerOptions } from 'pino';

export const LOG_REDACTION: NonNullable<LoggerOptions['redact']> = {
  paths: [
    'authorization',
    '*.authorization',
    'headers.authorization',
    '*.headers.authorization',
    '*.*.headers.authorization',
    'token',
    '*.token',
    'secret',
    '*.secret',
    'lockToken',
    '*.lockToken',
    'variables',
    '*.variables',
    'processVariables',
    '*.processVariables',
    'localVariables',
    '*.localVariables',
  ],
  censor: '[redacted]',
};
