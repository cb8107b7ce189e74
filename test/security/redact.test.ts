// The server's logger censors tokens, Authorization headers and variables wherever they appear.
// Secrets carry a prefix so that digits in the time stamp or pid cannot match them by chance.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { LOG_REDACTION } from '../../runtime/security/redact.ts';

describe('log redaction', () => {
  it('censors tokens, headers and variables at the top level and one or two levels down', () => {
    let text = '';
    const log = pino(
      { redact: LOG_REDACTION },
      new Writable({
        write(c, _e, done) {
          text += String(c);
          done();
        },
      }),
    );
    log.info(
      {
        token: 'tok-1',
        variables: { card: 'card-4111' },
        req: { headers: { authorization: 'Bearer tok-2' } },
        task: { lockToken: 'tok-3', variables: { pin: 'pin-1234' } },
      },
      'x',
    );
    log.warn({ err: { req: { headers: { authorization: 'Basic dG9rLTQ=' } } } }, 'y');
    for (const secret of ['tok-1', 'card-4111', 'tok-2', 'tok-3', 'pin-1234', 'dG9rLTQ=']) expect(text).not.toContain(secret);
    expect(text).toContain('[redacted]');
  });
});
