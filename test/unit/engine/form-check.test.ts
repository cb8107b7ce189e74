// A completion checked against its form: form-js patterns match as in the browser (anywhere in
// the text), and a pattern that backtracks for ages on a crafted value fails the field within
// the script budget instead of holding the server's thread.
import { describe, expect, it } from 'vitest';
import { checkForm } from '../../../runtime/engine/user-task-details.ts';

const form = (pattern: string) => ({
  formSchema: { components: [{ key: 'ref', label: 'Reference', type: 'textfield', validate: { pattern } }] },
});

describe('form patterns', () => {
  it('given a pattern, then a value containing a match passes and one without fails naming the field', () => {
    expect(checkForm(form('[A-Z]{3}-[0-9]+'), { ref: 'ref ABC-12' }, {})).toEqual([]);
    expect(checkForm(form('^[A-Z]{3}-[0-9]+$'), { ref: 'abc-12' }, {})).toEqual([
      { field: 'ref', message: 'Reference: must match ^[A-Z]{3}-[0-9]+$' },
    ]);
    expect(checkForm(form('(unclosed'), { ref: 'x' }, {})).toHaveLength(1);
  });

  it('given a pattern that backtracks exponentially and a crafted value, then the field fails within the budget', () => {
    const started = Date.now();
    const problems = checkForm(form('^(a+)+$'), { ref: `${'a'.repeat(40)}!` }, {});
    expect(problems.map((p) => p.field)).toEqual(['ref']);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
