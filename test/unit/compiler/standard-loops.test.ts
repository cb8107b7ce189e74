// Loop markers compile to loop scopes with a RepeatSpec; what cannot run as the specification
// says is refused naming the element.
import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, straight, task } from './bpmn-helpers.ts';

const marker = (inner: string, attributes = '') =>
  `<bpmn:standardLoopCharacteristics ${attributes}>${inner}</bpmn:standardLoopCharacteristics>`;
const condition = (text: string) => `<bpmn:loopCondition xsi:type="bpmn:tFormalExpression">${text}</bpmn:loopCondition>`;
const looping = (loop: string, extra = '') =>
  processXml(
    straight(`<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t">${loop}</bpmn:serviceTask>${extra}`, 'T'),
  );

describe('loop markers: compiled', () => {
  it('a task with a condition, testBefore and a maximum becomes the head of a loop scope', async () => {
    const { plan } = await compilePlan(looping(marker(condition('${loopCounter lt 3}'), 'testBefore="true" loopMaximum="10"')));
    expect(plan.steps.find((s) => s.id === 'loop:T')).toMatchObject({
      kind: 'loop',
      cycle: {
        head: 'T',
        steps: ['T'],
        backFlows: [],
        exitFlows: ['F_out'],
        repeat: {
          condition: {
            feel: '(if loopCounter = null then false else (if loopCounter instance of string then number(loopCounter) else loopCounter) < 3)',
          },
          testBefore: true,
          maximum: 10,
        },
      },
    });
    expect(plan.steps.find((s) => s.id === 'T')?.inLoop).toBe('loop:T');
  });

  it('a loopCondition in JavaScript is kept for the sandbox; in Groovy, or JavaScript that does not parse, it is refused', async () => {
    const js = (body: string, language = 'javascript') =>
      marker(`<bpmn:loopCondition xsi:type="bpmn:tFormalExpression" language="${language}">${body}</bpmn:loopCondition>`);
    const { plan } = await compilePlan(looping(js('loopCounter &lt; 3')));
    expect(plan.steps.find((s) => s.id === 'loop:T')?.cycle?.repeat?.condition).toEqual({
      javascript: 'loopCounter < 3',
      source: 'loopCounter < 3',
    });
    for (const [body, language, says] of [
      ['loopCounter &lt;', 'javascript', 'loopCondition is JavaScript that does not parse at line 1'],
      ['loopCounter &lt; 3', 'groovy', 'loopCondition is a groovy script, which Baton does not run'],
    ]) {
      expect(errorsOf(await compileDiagnostics(looping(js(body!, language))))).toEqual([
        expect.objectContaining({ elementId: 'T', message: expect.stringContaining(says!) }),
      ]);
    }
  });

  it('a looping task inside a loop of sequence flows nests in it', async () => {
    const body = [
      '<bpmn:startEvent id="S" />',
      `<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t">${marker('', 'loopMaximum="2"')}</bpmn:serviceTask>`,
      '<bpmn:exclusiveGateway id="G" default="F_out" />',
      '<bpmn:endEvent id="E" />',
      flow('F_in', 'S', 'T'),
      flow('F_g', 'T', 'G'),
      flow('F_back', 'G', 'T', '= again'),
      flow('F_out', 'G', 'E'),
    ].join('\n');
    const diagnostics = errorsOf(await compileDiagnostics(processXml(body)));
    expect(diagnostics).toEqual([
      expect.objectContaining({ elementId: 'T', message: expect.stringContaining('also starts a loop of sequence flows') }),
    ]);
    const inner = [
      '<bpmn:startEvent id="S" />',
      task('A'),
      `<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t">${marker('', 'loopMaximum="2"')}</bpmn:serviceTask>`,
      '<bpmn:exclusiveGateway id="G" default="F_out" />',
      '<bpmn:endEvent id="E" />',
      flow('F_in', 'S', 'A'),
      flow('F_a', 'A', 'T'),
      flow('F_g', 'T', 'G'),
      flow('F_back', 'G', 'A', '= again'),
      flow('F_out', 'G', 'E'),
    ].join('\n');
    const { plan } = await compilePlan(processXml(inner));
    expect(plan.steps.find((s) => s.id === 'loop:T')?.inLoop).toBe('loop:A');
  });
});

describe('loop markers: refused with the element id', () => {
  it.each([
    ['no condition and no maximum', marker(''), '', 'would repeat forever'],
    ['a maximum of 0', marker('', 'loopMaximum="0"'), '', 'loopMaximum "0" is not a whole number'],
    ['a condition that does not parse', marker(condition('= (')), '', 'loopCondition "= ("'],
    [
      'a non-interrupting boundary',
      marker('', 'loopMaximum="2"'),
      '<bpmn:boundaryEvent id="B" attachedToRef="T" cancelActivity="false"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent><bpmn:endEvent id="BE" />' +
        flow('F_b', 'B', 'BE'),
      'non-interrupting boundary event B',
    ],
  ])('%s', async (_name, loop, extra, text) => {
    expect(errorsOf(await compileDiagnostics(looping(loop, extra)))).toEqual([
      { elementId: 'T', severity: 'error', message: expect.stringContaining(text) },
    ]);
  });
});

const subprocess = (loop: string) =>
  processXml(
    straight(
      `<bpmn:subProcess id="P">${loop}<bpmn:startEvent id="PS" />${task('W')}<bpmn:endEvent id="PE" />${flow('P1', 'PS', 'W')}${flow('P2', 'W', 'PE')}</bpmn:subProcess>`,
      'P',
    ),
  );
const multi = (attributes: string) =>
  `<bpmn:multiInstanceLoopCharacteristics camunda:collection="items" camunda:elementVariable="item" ${attributes} />`;

describe('multi-instance subprocesses', () => {
  it('a sequential one becomes a loop scope whose passes run the elements', async () => {
    const { plan } = await compilePlan(
      subprocess(multi('isSequential="true" baton:outputCollection="out" baton:outputElement="= result"')),
    );
    expect(plan.steps.find((s) => s.id === 'loop:P')).toMatchObject({
      kind: 'loop',
      cycle: {
        head: 'P',
        exitFlows: ['F_out'],
        repeat: {
          testBefore: true,
          elements: {
            collection: 'items',
            elementVariable: 'item',
            sequential: true,
            outputCollection: 'out',
            outputElement: 'result',
          },
        },
      },
    });
    expect(plan.steps.find((s) => s.id === 'P')?.multiInstance).toBeUndefined();
    expect(plan.steps.find((s) => s.id === 'W')?.inLoop).toBe('loop:P');
  });

  it('an output collection without an output element and no collection are refused naming the subprocess, parallel or not', async () => {
    for (const sequential of ['isSequential="true"', '']) {
      const noElement = errorsOf(await compileDiagnostics(subprocess(multi(`${sequential} baton:outputCollection="out"`))));
      expect(noElement).toEqual([
        expect.objectContaining({ elementId: 'P', message: expect.stringContaining('needs an outputElement') }),
      ]);
    }
    const noList = errorsOf(
      await compileDiagnostics(subprocess('<bpmn:multiInstanceLoopCharacteristics isSequential="true" />')),
    );
    expect(noList).toEqual([expect.objectContaining({ elementId: 'P', message: expect.stringContaining('camunda:collection') })]);
  });

  it('one holding a compensation boundary compiles (each pass is undone after the loop); a compensation throw inside is refused', async () => {
    const inner = `<bpmn:startEvent id="PS" />${task('W')}<bpmn:boundaryEvent id="Undo_W" attachedToRef="W"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>${task('U', 'u', 'isForCompensation="true"')}<bpmn:association id="A1" associationDirection="One" sourceRef="Undo_W" targetRef="U" /><bpmn:endEvent id="PE" />${flow('P1', 'PS', 'W')}${flow('P2', 'W', 'PE')}`;
    const throwing = inner.replace(
      '<bpmn:endEvent id="PE" />',
      '<bpmn:endEvent id="PE"><bpmn:compensateEventDefinition /></bpmn:endEvent>',
    );
    for (const loop of [multi('isSequential="true"'), marker('', 'loopMaximum="2"')]) {
      const { plan } = await compilePlan(processXml(straight(`<bpmn:subProcess id="P">${loop}${inner}</bpmn:subProcess>`, 'P')));
      expect(plan.steps.find((s) => s.id === 'W')?.compensation).toEqual({ handler: 'U' });
      const xml = processXml(straight(`<bpmn:subProcess id="P">${loop}${throwing}</bpmn:subProcess>`, 'P'));
      expect(errorsOf(await compileDiagnostics(xml))).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            elementId: 'P',
            message: expect.stringContaining('PE repeats with it: compensation events do not run inside a loop'),
          }),
        ]),
      );
    }
  });
});
