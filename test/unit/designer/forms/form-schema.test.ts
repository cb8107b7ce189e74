// camunda:formData fields become the form-js schema the tasklist draws, with the checks the server
// makes on completion; an embedded Camunda Form is drawn as it is.
import { describe, expect, it } from 'vitest';
import { formSchemaOf, variablesOf } from '../../../../designer/forms/form-schema.ts';
import type { UserTaskFormField } from '../../../../designer/client/types.ts';

const FIELDS: UserTaskFormField[] = [
  { id: 'approved', label: 'Approved', type: 'boolean', defaultValue: 'true', constraints: [{ name: 'required' }] },
  {
    id: 'amount',
    type: 'long',
    defaultValue: '10',
    constraints: [{ name: 'required' }, { name: 'min', config: '0' }, { name: 'max', config: '1000' }],
  },
  {
    id: 'channel',
    label: 'Channel',
    type: 'enum',
    values: [
      { id: 'mail', name: 'Mail' },
      { id: 'phone', name: '' },
    ],
    constraints: [],
  },
  { id: 'due', label: 'Due', type: 'date', constraints: [{ name: 'readonly' }] },
  {
    id: 'note',
    type: 'string',
    constraints: [
      { name: 'minlength', config: '2' },
      { name: 'maxlength', config: '5' },
    ],
  },
];

describe('formSchemaOf', () => {
  it('given camunda:formData fields, then each becomes the form-js component of its type with the same checks', () => {
    const schema = formSchemaOf({ fields: FIELDS }, 't1');
    expect(schema).toEqual({
      type: 'default',
      id: 'form-data-t1',
      components: [
        // a checkbox always has a value: form-js's `required` would demand true
        { id: 'field_approved', key: 'approved', type: 'checkbox', label: 'Approved', defaultValue: true },
        {
          id: 'field_amount',
          key: 'amount',
          type: 'number',
          label: 'amount',
          decimalDigits: 0,
          defaultValue: 10,
          validate: { required: true, min: 0, max: 1000 },
        },
        {
          id: 'field_channel',
          key: 'channel',
          type: 'select',
          label: 'Channel',
          values: [
            { label: 'Mail', value: 'mail' },
            { label: 'phone', value: 'phone' },
          ],
          validate: {},
        },
        { id: 'field_due', key: 'due', type: 'datetime', subtype: 'date', dateLabel: 'Due', readonly: true, validate: {} },
        { id: 'field_note', key: 'note', type: 'textfield', label: 'note', validate: { minLength: 2, maxLength: 5 } },
      ],
    });
  });

  it('given an embedded Camunda Form, then it is drawn as it is, before any fields', () => {
    const embedded = { type: 'default', components: [{ type: 'textfield', key: 'x' }] };
    expect(formSchemaOf({ schema: embedded, fields: FIELDS }, 't1')).toBe(embedded);
  });

  it('given no form Baton draws (a form key, nothing), then there is no schema', () => {
    expect(formSchemaOf({ formKey: 'embedded:app:forms/x.html' }, 't1')).toBeUndefined();
    expect(formSchemaOf({ fields: [] }, 't1')).toBeUndefined();
    expect(formSchemaOf({ schema: 'not a form' }, 't1')).toBeUndefined();
  });
});

describe('variablesOf', () => {
  it('given fields left empty, then they are not sent, so the instance keeps its values', () => {
    expect(variablesOf({ a: 1, b: null, c: undefined, d: '', e: false })).toEqual({ a: 1, d: '', e: false });
  });
});
