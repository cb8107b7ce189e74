import { evaluate } from 'feelin';
import { describe, expect, it } from 'vitest';
import { fingerprintPlan } from '../../../runtime/compiler/index.ts';
import type { IoSpec } from '../../../runtime/compiler/plan.ts';
import { compileDiagnostics, compilePlan, errorsOf, processXml, straight } from './bpmn-helpers.ts';

const ZEEBE = 'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"';

function camundaTask(inputOutput: string, attributes = ''): string {
  return `<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" ${attributes}>
    <bpmn:extensionElements><camunda:inputOutput>${inputOutput}</camunda:inputOutput></bpmn:extensionElements>
  </bpmn:serviceTask>`;
}

function zeebeTask(ioMapping: string): string {
  return `<bpmn:serviceTask id="T"><bpmn:extensionElements>
    <zeebe:taskDefinition type="t" /><zeebe:ioMapping>${ioMapping}</zeebe:ioMapping>
  </bpmn:extensionElements></bpmn:serviceTask>`;
}

function feelOf(mapping: IoSpec['inputs'][number]): string {
  if (!('feel' in mapping)) throw new Error(`${mapping.target} is a script mapping`);
  return mapping.feel;
}

async function ioOf(taskXml: string, namespaces = ''): Promise<IoSpec | undefined> {
  const { plan } = await compilePlan(processXml(straight(taskXml, 'T'), namespaces));
  return plan.steps.find((s) => s.id === 'T')?.io;
}

async function errorsFor(taskXml: string, namespaces = ''): Promise<string[]> {
  return errorsOf(await compileDiagnostics(processXml(straight(taskXml, 'T'), namespaces))).map(
    (d) => `${d.elementId}: ${d.message}`,
  );
}

describe('readIoMappings: camunda:inputOutput', () => {
  it('given text, an expression, an empty body, a list and a map, then each becomes FEEL in document order', async () => {
    const io = await ioOf(
      camundaTask(`
        <camunda:inputParameter name="amount">\${order.total}</camunda:inputParameter>
        <camunda:inputParameter name="greeting">Hello "you"</camunda:inputParameter>
        <camunda:inputParameter name="nothing" />
        <camunda:inputParameter name="list"><camunda:list><camunda:value>a</camunda:value><camunda:value>\${amount}</camunda:value></camunda:list></camunda:inputParameter>
        <camunda:inputParameter name="map"><camunda:map><camunda:entry key="k">v</camunda:entry><camunda:entry key="n">\${amount > 1}</camunda:entry></camunda:map></camunda:inputParameter>
        <camunda:outputParameter name="paid">\${status == "ok"}</camunda:outputParameter>`),
    );
    expect(io?.inputs.map((m) => m.target)).toEqual(['amount', 'greeting', 'nothing', 'list', 'map']);
    expect(io?.inputs[0]).toEqual({ target: 'amount', feel: expect.any(String), source: '${order.total}' });
    const values = io!.inputs.map((m) => evaluate(feelOf(m), { order: { total: 5 }, amount: 10 }).value as unknown);
    expect(values).toEqual([5, 'Hello "you"', null, ['a', 10], { k: 'v', n: true }]);
    expect(io?.outputs).toEqual([{ target: 'paid', feel: expect.any(String), source: '${status == "ok"}' }]);
    expect(evaluate(feelOf(io!.outputs[0]!), { status: 'ok' }).value).toBe(true);
  });

  it('given a JavaScript camunda:script as a whole parameter, then it is kept as written for the sandbox; inside a list, or not parsing, it is refused', async () => {
    const io = await ioOf(
      camundaTask(`<camunda:inputParameter name="score"><camunda:script scriptFormat="javascript">execution.setVariable("seen", true);
  amount * 2</camunda:script></camunda:inputParameter>
        <camunda:outputParameter name="label"><camunda:script scriptFormat="JavaScript">"paid " + amount</camunda:script></camunda:outputParameter>`),
    );
    expect(io).toEqual({
      inputs: [
        {
          target: 'score',
          javascript: 'execution.setVariable("seen", true);\n  amount * 2',
          source: 'execution.setVariable("seen", true);\n  amount * 2',
        },
      ],
      outputs: [{ target: 'label', javascript: '"paid " + amount', source: '"paid " + amount' }],
    });
    const errors = await errorsFor(
      camundaTask(`<camunda:inputParameter name="x"><camunda:list><camunda:script scriptFormat="javascript">1</camunda:script></camunda:list></camunda:inputParameter>
        <camunda:inputParameter name="y"><camunda:script scriptFormat="javascript">amount *</camunda:script></camunda:inputParameter>`),
    );
    expect(errors).toEqual([
      expect.stringMatching(
        /camunda:inputParameter "x" holds a JavaScript script inside a list or a map, .*; camunda:inputParameter "y": its JavaScript does not parse at line 1/,
      ),
    ]);
  });

  it('given a camunda:script in another language, then the deploy is refused naming the element and saying what to do', async () => {
    const errors = await errorsFor(
      camundaTask(
        '<camunda:inputParameter name="x"><camunda:script scriptFormat="groovy">1 + 1</camunda:script></camunda:inputParameter>',
      ),
    );
    expect(errors).toEqual([
      expect.stringMatching(
        /^T: Service task T: camunda:inputParameter "x" is a groovy script .* Baton does not run: write it in JavaScript, write the value as an expression/,
      ),
    ]);
  });

  it.each([
    [
      'an expression toFeel cannot translate',
      '<camunda:inputParameter name="x">${a.b()}</camunda:inputParameter>',
      /"\$\{a\.b\(\)\}" cannot be used/,
    ],
    [
      'text mixed with an expression',
      '<camunda:inputParameter name="x">Dear ${name}</camunda:inputParameter>',
      /mixes text and expressions/,
    ],
    [
      'a name with a dot',
      '<camunda:outputParameter name="a.b">1</camunda:outputParameter>',
      /a name with a dot is not supported/,
    ],
  ])('given %s, then the deploy is refused naming the element', async (_what, body, message) => {
    const diagnostics = await compileDiagnostics(processXml(straight(camundaTask(body), 'T')));
    expect(diagnostics.map((d) => `${d.elementId}: ${d.message}`)).toEqual([expect.stringMatching(/^T: Service task T: /)]);
    const errors = errorsOf(diagnostics).map((d) => d.message);
    expect(errors[0]).toMatch(message);
  });

  it('given a multi-instance task, then its mappings are compiled next to its loop', async () => {
    const xml = `<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t">
      <bpmn:extensionElements><camunda:inputOutput><camunda:inputParameter name="who">\${item.name}</camunda:inputParameter></camunda:inputOutput></bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics camunda:collection="items" camunda:elementVariable="item" />
    </bpmn:serviceTask>`;
    const { plan } = await compilePlan(processXml(straight(xml, 'T')));
    const step = plan.steps.find((s) => s.id === 'T');
    expect(step?.multiInstance?.elementVariable).toBe('item');
    expect(step?.io?.inputs.map((m) => m.target)).toEqual(['who']);
  });
});

describe('readIoMappings: zeebe:ioMapping', () => {
  it('given FEEL and literal sources and a nested target, then they are compiled in order', async () => {
    const io = await ioOf(
      zeebeTask(`<zeebe:input source="=customer.name" target="sender" /><zeebe:input source="EUR" target="currency" />
        <zeebe:output source="=result.total" target="order.total" />`),
      ZEEBE,
    );
    expect(io).toEqual({
      inputs: [
        { target: 'sender', feel: 'customer.name', source: '=customer.name' },
        { target: 'currency', feel: '"EUR"', source: 'EUR' },
      ],
      outputs: [{ target: 'order.total', feel: 'result.total', source: '=result.total' }],
    });
  });

  it.each([
    [
      'a target that is not a name or a path',
      '<zeebe:input source="=a" target="order..total" />',
      /target "order\.\.total" is not a variable name/,
    ],
    [
      'a source that does not parse',
      '<zeebe:output source="= a +" target="b" />',
      /zeebe:output to "b": source "= a \+" cannot be used/,
    ],
    ['a source that iterates', '<zeebe:input source="=for x in xs return x" target="b" />', /iterates \(for, some, every\)/],
  ])('given %s, then the deploy is refused naming the element', async (_what, body, message) => {
    const errors = await errorsFor(zeebeTask(body), ZEEBE);
    expect(errors).toEqual([expect.stringMatching(/^T: Service task T: /)]);
    expect(errors[0]).toMatch(message);
  });

  it('given an embedded subprocess with mappings in either dialect, then they are compiled on its step; a bad one is refused naming it', async () => {
    const body = (mappings: string) =>
      `<bpmn:subProcess id="T"><bpmn:extensionElements>${mappings}</bpmn:extensionElements>
        <bpmn:startEvent id="S2" /><bpmn:serviceTask id="W" camunda:type="external" camunda:topic="w" /><bpmn:endEvent id="E2" />
        <bpmn:sequenceFlow id="F2" sourceRef="S2" targetRef="W" /><bpmn:sequenceFlow id="F3" sourceRef="W" targetRef="E2" />
      </bpmn:subProcess>`;
    const camunda = await ioOf(
      body(
        '<camunda:inputOutput><camunda:inputParameter name="a">${x}</camunda:inputParameter><camunda:outputParameter name="b">${a}</camunda:outputParameter></camunda:inputOutput>',
      ),
    );
    expect(camunda?.inputs.map((m) => [m.target, m.source])).toEqual([['a', '${x}']]);
    expect(camunda?.outputs.map((m) => [m.target, m.source])).toEqual([['b', '${a}']]);
    const zeebe = await ioOf(body('<zeebe:ioMapping><zeebe:input source="=x" target="a" /></zeebe:ioMapping>'), ZEEBE);
    expect(zeebe?.inputs.map((m) => [m.target, m.source])).toEqual([['a', '=x']]);
    const errors = await errorsFor(body('<zeebe:ioMapping><zeebe:input source="=x +" target="a" /></zeebe:ioMapping>'), ZEEBE);
    expect(errors).toEqual([expect.stringMatching(/^T: Subprocess T: zeebe:input to "a": source "=x \+" cannot be used/)]);
  });

  it('given a message catch event, then its inputs and outputs are compiled without a warning, also after an event-based gateway', async () => {
    const mappings =
      '<zeebe:ioMapping><zeebe:input source="=x" target="a" /><zeebe:output source="=payload.id" target="id" /></zeebe:ioMapping>';
    const catchEvent = (id: string) =>
      `<bpmn:intermediateCatchEvent id="${id}"><bpmn:extensionElements>${mappings}</bpmn:extensionElements><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent>`;
    const withMessage = (xml: string) => xml.replace('<bpmn:process', '<bpmn:message id="M" name="m" />\n<bpmn:process');
    const plain = await compilePlan(withMessage(processXml(straight(catchEvent('T'), 'T'), ZEEBE)));
    expect(plain.plan.steps.find((s) => s.id === 'T')?.io).toEqual({
      inputs: [expect.objectContaining({ target: 'a', source: '=x' })],
      outputs: [expect.objectContaining({ target: 'id', source: '=payload.id' })],
    });
    expect(plain.warnings).toEqual([]);
    const raced = await compilePlan(
      withMessage(
        processXml(
          [
            '<bpmn:startEvent id="S" />',
            '<bpmn:eventBasedGateway id="G" />',
            catchEvent('T'),
            '<bpmn:intermediateCatchEvent id="Late"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>',
            '<bpmn:endEvent id="E" />',
            '<bpmn:sequenceFlow id="F1" sourceRef="S" targetRef="G" />',
            '<bpmn:sequenceFlow id="F2" sourceRef="G" targetRef="T" />',
            '<bpmn:sequenceFlow id="F3" sourceRef="G" targetRef="Late" />',
            '<bpmn:sequenceFlow id="F4" sourceRef="T" targetRef="E" />',
            '<bpmn:sequenceFlow id="F5" sourceRef="Late" targetRef="E" />',
          ].join('\n'),
          ZEEBE,
        ),
      ),
    );
    expect(raced.plan.steps.find((s) => s.id === 'T')?.io).toEqual(plain.plan.steps.find((s) => s.id === 'T')?.io);
    expect(raced.warnings.map((w) => `${w.elementId}: ${w.message}`)).toEqual(
      plain.warnings.map((w) => `${w.elementId}: ${w.message}`),
    );
  });

  it('given no mappings, then the step has no io', async () => {
    expect(await ioOf('<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" />')).toBeUndefined();
  });
});

describe('the fingerprint and mappings', () => {
  it('changes when a mapping changes, and stays as it was for a task without mappings', async () => {
    const one = await compilePlan(processXml(straight(zeebeTask('<zeebe:input source="=a" target="b" />'), 'T'), ZEEBE));
    const other = await compilePlan(processXml(straight(zeebeTask('<zeebe:input source="=a + 1" target="b" />'), 'T'), ZEEBE));
    expect(one.fingerprint).not.toBe(other.fingerprint);
    const { io: _io, ...withoutIo } = one.plan.steps.find((s) => s.id === 'T')!;
    const bare = { ...one.plan, steps: one.plan.steps.map((s) => (s.id === 'T' ? withoutIo : s)) };
    const plain = await compilePlan(
      processXml(
        straight(
          '<bpmn:serviceTask id="T"><bpmn:extensionElements><zeebe:taskDefinition type="t" /></bpmn:extensionElements></bpmn:serviceTask>',
          'T',
        ),
        ZEEBE,
      ),
    );
    expect(fingerprintPlan(bare)).toBe(plain.fingerprint);
  });
});
