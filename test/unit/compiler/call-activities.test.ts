// Call activities compile to a CallSpec in both dialects; what Baton cannot run as written is
// refused naming the element.
import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, processXml, straight } from './bpmn-helpers.ts';

const ZEEBE = 'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"';

function callXml(attributes: string, extensions = '', inner = ''): string {
  const ext = extensions ? `<bpmn:extensionElements>${extensions}</bpmn:extensionElements>` : '';
  return processXml(straight(`<bpmn:callActivity id="C" ${attributes}>${ext}${inner}</bpmn:callActivity>`, 'C'), ZEEBE);
}

async function callSpec(xml: string) {
  return (await compilePlan(xml)).plan.steps.find((s) => s.id === 'C');
}

describe('call activities: compiled', () => {
  it('Camunda 7: calledElement, version binding, camunda:in/out and the business key', async () => {
    const step = await callSpec(
      callXml(
        'calledElement="child" camunda:calledElementBinding="version" camunda:calledElementVersion="3"',
        `<camunda:in source="a" target="b" /><camunda:in sourceExpression="\${x.y}" target="y" /><camunda:in variables="all" />
         <camunda:in businessKey="#{execution.processBusinessKey}" /><camunda:out source="r" target="result" />`,
      ),
    );
    expect(step).toMatchObject({
      kind: 'callActivity',
      call: {
        process: { key: 'child' },
        binding: 'version',
        version: 3,
        inAll: true,
        inputs: [
          { target: 'b', feel: 'a' },
          { target: 'y', feel: 'x.y' },
        ],
        outAll: false,
        outputs: [{ target: 'result', feel: 'r' }],
        businessKey: true,
      },
    });
  });

  it('Zeebe: propagation on by default, an output mapping restricts what comes back, a FEEL process id', async () => {
    const step = await callSpec(
      callXml(
        '',
        `<zeebe:calledElement processId="=kind + &quot;_flow&quot;" /><zeebe:ioMapping><zeebe:output source="=total" target="order.total" /></zeebe:ioMapping>`,
      ),
    );
    expect(step?.call).toMatchObject({
      process: { feel: 'kind + "_flow"' },
      binding: 'latest',
      inAll: true,
      outAll: false,
      outputs: [{ target: 'order.total', feel: 'total' }],
    });
    const plain = await compilePlan(callXml('', '<zeebe:calledElement processId="child" propagateAllParentVariables="false" />'));
    expect(plain.plan.steps.find((s) => s.id === 'C')?.call).toMatchObject({ inAll: false, outAll: true });
    expect(plain.warnings).toEqual([]);
  });
});

describe('call activities: version tags', () => {
  it('binds to a version tag in both dialects, and a process carries its own tag in the plan', async () => {
    expect(
      (
        await callSpec(
          callXml('calledElement="c" camunda:calledElementBinding="versionTag" camunda:calledElementVersionTag="v2"'),
        )
      )?.call,
    ).toMatchObject({ process: { key: 'c' }, binding: 'versionTag', versionTag: 'v2' });
    expect(
      (await callSpec(callXml('', '<zeebe:calledElement processId="c" bindingType="versionTag" versionTag="2.0" />')))?.call,
    ).toMatchObject({ process: { key: 'c' }, binding: 'versionTag', versionTag: '2.0' });
    const tagged = callXml('calledElement="c"').replace('isExecutable="true"', 'isExecutable="true" camunda:versionTag="v7"');
    expect((await compilePlan(tagged)).plan.versionTag).toBe('v7');
    const zeebeTagged = callXml('calledElement="c"').replace(
      /(<bpmn:process [^>]*>)/,
      '$1<bpmn:extensionElements><zeebe:versionTag value="z1" /></bpmn:extensionElements>',
    );
    expect((await compilePlan(zeebeTagged)).plan.versionTag).toBe('z1');
    expect((await compilePlan(callXml('calledElement="c"'))).plan.versionTag).toBeUndefined();
  });

  it('binds to the deployment of the caller in both dialects', async () => {
    expect((await callSpec(callXml('calledElement="c" camunda:calledElementBinding="deployment"')))?.call).toMatchObject({
      process: { key: 'c' },
      binding: 'deployment',
    });
    expect((await callSpec(callXml('', '<zeebe:calledElement processId="c" bindingType="deployment" />')))?.call).toMatchObject({
      process: { key: 'c' },
      binding: 'deployment',
    });
  });
});

describe('call activities: refused with the element id', () => {
  it.each([
    ['no called element', '', '', '', 'calledElement is empty'],
    [
      'an unknown binding',
      'calledElement="c" camunda:calledElementBinding="newest"',
      '',
      '',
      'camunda:calledElementBinding "newest" is not supported',
    ],
    [
      'versionTag binding without a tag',
      'calledElement="c" camunda:calledElementBinding="versionTag"',
      '',
      '',
      'camunda:calledElementVersionTag is empty',
    ],
    [
      'versionTag binding to an expression',
      'calledElement="c" camunda:calledElementBinding="versionTag" camunda:calledElementVersionTag="${tag}"',
      '',
      '',
      'is an expression',
    ],
    [
      'a bad version',
      'calledElement="c" camunda:calledElementBinding="version" camunda:calledElementVersion="x"',
      '',
      '',
      'is not a version number',
    ],
    ['a Java mapping', 'calledElement="c" camunda:variableMappingClass="a.B"', '', '', 'variable mapping delegate is Java code'],
    [
      'another business key',
      'calledElement="c"',
      '<camunda:in businessKey="${orderId}" />',
      '',
      'businessKey="${orderId}" is not supported',
    ],
    [
      'a local out',
      'calledElement="c"',
      '<camunda:out source="a" target="a" local="true" />',
      '',
      'local="true" is not supported',
    ],
    [
      'a local in',
      'calledElement="c"',
      '<camunda:in variables="all" local="true" />',
      '',
      'local="true" passes the call activity\'s own input parameters',
    ],
    [
      'an unknown Zeebe binding',
      '',
      '<zeebe:calledElement processId="c" bindingType="version" />',
      '',
      'bindingType "version" is not supported',
    ],
  ])('%s', async (_name, attributes, extensions, inner, text) => {
    const errors = errorsOf(await compileDiagnostics(callXml(attributes, extensions, inner)));
    expect(errors).toEqual([{ elementId: 'C', severity: 'error', message: expect.stringContaining(text) }]);
  });
});
