// Errors for bad input and missing things. Races are results, not errors: a lost guard is a typed result.

export const ErrorCode = {
  /** the request body or query does not match its schema */
  validation: 'validation',
  /** the BPMN does not compile */
  compile: 'compile',
  not_found: 'not_found',
  /** the caller may not do this to this target (a person who is not a candidate for a user task) */
  forbidden: 'forbidden',
  /** the target is in a state that refuses the call */
  conflict: 'conflict',
  /** the caller no longer holds the task's lock */
  lock_lost: 'lock_lost',
  payload_too_large: 'payload_too_large',
  unsupported_media_type: 'unsupported_media_type',
  /** a message found no waiting subscription and may not be kept */
  no_match: 'no_match',
  /** the answer cannot be given safely right now; the same call later can (an instance's history while its writers stay open) */
  unavailable: 'unavailable',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export class BatonError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BatonError';
  }
}
