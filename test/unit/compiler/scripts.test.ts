import { describe, expect, it } from 'vitest';
import type { ScriptSpec } from '../../../runtime/compiler/plan.ts';
import { compileDiagnostics, compilePlan, errorsOf, processXml, straight } from './bpmn-helpers.ts';

const ZEEBE_NS = 'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"';

async function stepOf(taskXml: string, namespaces = '') {
  const { plan } = await compilePlan(processXml(straight(taskXml, 'T'), namespaces));
  return plan.steps.find((s) => s.id === 'T');
}

async function scriptOf(taskXml: string, namespaces = ''): Promise<ScriptSpec | undefined> {
  return (await stepOf(taskXml, namespaces))?.script;
}

async function errorFor(taskXml: string, namespaces = ''): Promise<string[]> {
  return errorsOf(await compileDiagnostics(processXml(straight(taskXml, 'T'), namespaces))).map(
    (d) => `${d.elementId}: ${d.message}`,
  );
}

function scriptTask(format: string, body: string, attributes = ''): string {
  return `<bpmn:scriptTask id="T" name="Sum up" scriptFormat="${format}" ${attributes}><bpmn:script><![CDATA[${body}]]></bpmn:script></bpmn:scriptTask>`;
}

describe('script tasks: Camunda 7 files', () => {
  it('reads an inline JavaScript script and camunda:resultVariable', async () => {
    const step = await stepOf(scriptTask('JavaScript', 'a + b', 'camunda:resultVariable="sum"'));
    expect(step?.kind).toBe('scriptTask');
    expect(step?.script).toEqual({ language: 'javascript', source: 'a + b', resultVariable: 'sum' });
  });

  it('refuses JavaScript that does not parse, saying where, and runs none of it', async () => {
    expect(await errorFor(scriptTask('javascript', 'const total = 1;\nlet x = (total +;'))).toEqual([
      'T: Script task T "Sum up": its JavaScript does not parse at line 2, column 17: Unexpected token',
    ]);
    // A module's syntax is not a script's, and a top-level return is refused as QuickJS refuses it.
    expect(await errorFor(scriptTask('javascript', 'return 1'))).toEqual([
      expect.stringContaining("its JavaScript does not parse at line 1, column 1: 'return' outside of function"),
    ]);
    expect((await scriptOf(scriptTask('javascript', 'while (true) {}')))?.source).toBe('while (true) {}');
  });

  it('reads a FEEL script, with or without its "="', async () => {
    expect(await scriptOf(scriptTask('feel', '= a + b', 'camunda:resultVariable="sum"'))).toEqual({
      language: 'feel',
      source: 'a + b',
      resultVariable: 'sum',
    });
    expect(await scriptOf(scriptTask('feel', 'count(items)'))).toEqual({ language: 'feel', source: 'count(items)' });
  });

  it('refuses another language, naming it and what to do', async () => {
    expect(await errorFor(scriptTask('groovy', 'execution.setVariable("a", 1)'))).toEqual([
      expect.stringMatching(
        /^T: Script task T "Sum up": Baton does not run groovy scripts \(only FEEL and JavaScript\): rewrite it/,
      ),
    ]);
  });

  it('refuses a script kept in a resource, an empty script and a missing format', async () => {
    expect(await errorFor('<bpmn:scriptTask id="T" scriptFormat="javascript" camunda:resource="classpath://sum.js" />')).toEqual([
      expect.stringContaining('kept in the resource "classpath://sum.js", which Baton does not load'),
    ]);
    expect(await errorFor(scriptTask('javascript', '  '))).toEqual([expect.stringContaining('its script is empty')]);
    expect(await errorFor('<bpmn:scriptTask id="T" />')).toEqual([expect.stringContaining('it has no script format')]);
  });

  it('refuses a FEEL script that does not parse, and a loop marker', async () => {
    expect(await errorFor(scriptTask('feel', '= a +'))).toEqual([expect.stringContaining('is incomplete')]);
    const marked = `<bpmn:scriptTask id="T" scriptFormat="javascript"><bpmn:multiInstanceLoopCharacteristics camunda:collection="\${items}" /><bpmn:script>1</bpmn:script></bpmn:scriptTask>`;
    expect(await errorFor(marked)).toEqual([expect.stringContaining('a script task cannot loop or be multi-instance')]);
  });
});

describe('script tasks: Camunda 8 files', () => {
  it('reads zeebe:script with its result variable', async () => {
    const xml = `<bpmn:scriptTask id="T"><bpmn:extensionElements><zeebe:script expression="=sum(for i in items return i.price)" resultVariable="total" /></bpmn:extensionElements></bpmn:scriptTask>`;
    expect(await scriptOf(xml, ZEEBE_NS)).toEqual({
      language: 'feel',
      source: 'sum(for i in items return i.price)',
      resultVariable: 'total',
    });
  });

  it('refuses a zeebe:script without a result variable', async () => {
    const xml = `<bpmn:scriptTask id="T"><bpmn:extensionElements><zeebe:script expression="=1 + 1" /></bpmn:extensionElements></bpmn:scriptTask>`;
    expect(await errorFor(xml, ZEEBE_NS)).toEqual([expect.stringContaining('its zeebe:script has no result variable')]);
  });

  it('runs a script task with a zeebe:taskDefinition as an external task for its job worker', async () => {
    const xml = `<bpmn:scriptTask id="T"><bpmn:extensionElements><zeebe:taskDefinition type="render" /></bpmn:extensionElements></bpmn:scriptTask>`;
    const step = await stepOf(xml, ZEEBE_NS);
    expect(step?.kind).toBe('serviceTask');
    expect(step?.task?.topic).toBe('render');
  });
});
