import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import { parseBpmn } from '../../../runtime/compiler/parse.ts';
import { compileDiagnostics, compilePlan, errorsOf, processXml, readFixture, straight, task } from './bpmn-helpers.ts';

describe('parseBpmn: refusals before and during parsing', () => {
  it.each(['<!DOCTYPE', '<!doctype', '<!DocType'])('refuses a %s declaration without parsing it', async (doctype) => {
    const xml = `<?xml version="1.0"?>${doctype} lolz [<!ENTITY lol "lol">]>\n${processXml('').replace(/^<\?xml[^>]*>/, '')}`;
    expect(await compileDiagnostics(xml)).toEqual([
      { elementId: 'definitions', severity: 'error', message: expect.stringContaining('DOCTYPE declarations are not allowed') },
    ]);
  });

  it('reports malformed XML as one diagnostic carrying the parser message', async () => {
    const xml = processXml(straight(task('T'), 'T')).replace('</bpmn:process>', '');
    const diagnostics = await compileDiagnostics(xml);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]).toMatchObject({ elementId: 'definitions', severity: 'error' });
    expect(diagnostics[0]?.message).toMatch(/not readable BPMN XML: .*closing tag mismatch/);
  });

  it('counts lines and columns from 1, as editors do, and says when a file stops early', async () => {
    const xml = processXml(straight(task('T'), 'T'));
    const lines = xml.split('\n');
    const line = lines.findIndex((l) => l.includes('</bpmn:process>'));
    const column = lines[line]!.indexOf('</bpmn:process>');
    const [mismatch] = await compileDiagnostics(xml.replace('</bpmn:process>', '</bpmn:proc>'));
    expect(mismatch?.message).toContain(`closing tag mismatch </bpmn:proc> at line ${line + 1}, column ${column + 1}.`);
    const [cut] = await compileDiagnostics(xml.slice(0, xml.indexOf('</bpmn:process>')));
    expect(cut?.message).toMatch(/unexpected end of file: the file stops before its elements are closed \(is it cut short\?\)/);
    expect(cut?.message).not.toMatch(/line|column/);
  });

  it.each([
    ['plain text', 'hello world', /missing start tag/],
    ['an empty string', '', /missing start tag/],
    ['another XML vocabulary', '<html><body/></html>', /failed to parse document as <bpmn:Definitions>/],
  ])('refuses %s', async (_what, xml, message) => {
    const diagnostics = await compileDiagnostics(xml);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]?.elementId).toBe('definitions');
    expect(diagnostics[0]?.message).toMatch(message);
  });

  it('reports an unknown BPMN element with the id written on it', async () => {
    const xml = processXml(`${straight(task('T'), 'T')}\n<bpmn:fooTask id="Typo_1" />`);
    const errors = errorsOf(await compileDiagnostics(xml));
    expect(errors).toEqual([
      {
        elementId: 'Typo_1',
        severity: 'error',
        message: expect.stringMatching(/^Unknown BPMN element <bpmn:fooTask> \(line \d+\)/),
      },
    ]);
  });

  it('falls back to the definitions id when the unknown element has no id', async () => {
    const errors = errorsOf(await compileDiagnostics(processXml(`${straight(task('T'), 'T')}\n<bpmn:fooTask />`)));
    expect(errors.map((e) => e.elementId)).toEqual(['Defs']);
  });

  it('reports an id used twice', async () => {
    const xml = processXml(`${straight(task('T'), 'T')}\n<bpmn:endEvent id="T" />`);
    expect(errorsOf(await compileDiagnostics(xml))).toContainEqual(
      expect.objectContaining({ elementId: 'T', message: expect.stringContaining('Id T is used by more than one element') }),
    );
  });

  it('ignores unknown extension attributes and elements of foreign namespaces', async () => {
    const xml = processXml(
      `${straight(task('T', 'topic', 'camunda:unknownThing="1" acme:cost="3" foo="bar"'), 'T')}
       <bpmn:extensionElements><acme:sla hours="4" /></bpmn:extensionElements>`,
      'xmlns:acme="https://acme.example"',
    );
    const { warnings } = await compilePlan(xml);
    expect(warnings).toEqual([]);
  });

  it('warns about, and ignores, unknown elements of the camunda namespace', async () => {
    const body = straight(
      '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t"><bpmn:extensionElements><camunda:fromTheFuture /></bpmn:extensionElements></bpmn:serviceTask>',
      'T',
    );
    const { warnings } = await compilePlan(processXml(body));
    // The unknown tag has no id of its own, so the warning points at the definitions.
    expect(warnings).toEqual([
      expect.objectContaining({
        elementId: 'Defs',
        severity: 'warning',
        message: expect.stringContaining('<camunda:fromTheFuture'),
      }),
    ]);
  });

  it('reads ISO-8859-1 declared files (the encoding warning changes nothing)', async () => {
    const xml = processXml(straight(task('T'), 'T')).replace('encoding="UTF-8"', 'encoding="ISO-8859-1"');
    expect((await compilePlan(xml)).warnings).toEqual([]);
  });

  it('reads zeebe task definitions only when the file declares the zeebe namespace', async () => {
    const zeebe = await parseBpmn(readFixture('zeebe-order.bpmn'));
    const camunda = await parseBpmn(readFixture('order.bpmn'));
    if (!zeebe.ok || !camunda.ok) expect.fail('fixtures must parse');
    expect(zeebe.document.zeebeTasks.get('ChargeCard')).toMatchObject({ type: 'charge-card', retries: '7' });
    expect(camunda.document.zeebeTasks.size).toBe(0);
  });

  it('collects unresolved references for the checks that need them', async () => {
    const parsed = await parseBpmn(processXml('<bpmn:sequenceFlow id="F" sourceRef="Nowhere" targetRef="Gone" />'));
    if (!parsed.ok) expect.fail('must parse');
    expect(parsed.document.unresolved).toEqual([
      { elementId: 'F', property: 'bpmn:sourceRef', reference: 'Nowhere' },
      { elementId: 'F', property: 'bpmn:targetRef', reference: 'Gone' },
    ]);
  });

  it('never throws, whatever it is given', async () => {
    for (const input of [undefined, null, 42, {}, '<', '<<<>>>', '\u0000', 'x'.repeat(100_000)]) {
      const result = await compileBpmn(input as unknown as string);
      expect(result.ok).toBe(false);
    }
  });
});
