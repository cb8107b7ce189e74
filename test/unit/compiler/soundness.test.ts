import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, readFixture, task } from './bpmn-helpers.ts';

const unsound = readFixture('unsound.bpmn');

/** start S -> `split` gateway G -> tasks A, B -> both into `target` J (a join or a step) -> end E unless J is an end */
function diamond(split: string, target: string): string {
  const conditional = split !== 'parallelGateway';
  const ending = target.includes('endEvent');
  return processXml(
    [
      '<bpmn:startEvent id="S" />',
      `<bpmn:${split} id="G" />`,
      task('A'),
      task('B'),
      target,
      flow('F0', 'S', 'G'),
      flow('ToA', 'G', 'A', conditional ? '${a}' : undefined),
      flow('ToB', 'G', 'B', conditional ? '${b}' : undefined),
      flow('FromA', 'A', 'J'),
      flow('FromB', 'B', 'J'),
      ...(ending ? [] : ['<bpmn:endEvent id="E" />', flow('Out', 'J', 'E')]),
    ].join('\n'),
  );
}

describe('checkSoundness: parallel joins', () => {
  it('refuses a parallel join of the two sides of an exclusive choice', async () => {
    expect(await compileDiagnostics(unsound, { processId: 'xor-into-and' })).toEqual([
      {
        elementId: 'JoinBoth',
        severity: 'error',
        message:
          'Parallel gateway JoinBoth joins flows FromA and FromB, which are never taken together (gateway Choose chooses between them): BPMN would wait here forever. Merge them with an exclusive or inclusive gateway instead',
      },
    ]);
  });

  it('accepts a parallel join of a parallel fork (the order fixture)', async () => {
    expect((await compilePlan(readFixture('order.bpmn'))).warnings).toEqual([]);
  });

  it('accepts a parallel join whose inputs are all taken in some run, even if not in every run', async () => {
    // Fork -> A -> Join; Fork -> G (a: -> Join, else -> end). When G sends the token to the end,
    // the join sees a skipped input at run time: the engine raises an incident there (DESIGN.md §3).
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:parallelGateway id="Fork" />',
        task('A'),
        '<bpmn:exclusiveGateway id="G" default="ToEnd" />',
        '<bpmn:parallelGateway id="J" />',
        '<bpmn:endEvent id="E1" />',
        '<bpmn:endEvent id="E2" />',
        flow('F0', 'S', 'Fork'),
        flow('F1', 'Fork', 'A'),
        flow('F2', 'Fork', 'G'),
        flow('F3', 'A', 'J'),
        flow('ToJoin', 'G', 'J', '${a}'),
        flow('ToEnd', 'G', 'E2'),
        flow('F4', 'J', 'E1'),
      ].join('\n'),
    );
    expect((await compilePlan(xml)).warnings).toEqual([]);
  });

  it('refuses a parallel join after an exclusive split and merge fed again by the same choice', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:exclusiveGateway id="G" default="ToB" />',
        task('A'),
        task('B'),
        task('C'),
        '<bpmn:parallelGateway id="J" />',
        '<bpmn:endEvent id="E" />',
        flow('F0', 'S', 'G'),
        flow('ToA', 'G', 'A', '${a}'),
        flow('ToB', 'G', 'B'),
        flow('F1', 'A', 'C'),
        flow('F2', 'C', 'J'),
        flow('F3', 'B', 'J'),
        flow('F4', 'J', 'E'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml))).toEqual([
      expect.objectContaining({
        elementId: 'J',
        message: expect.stringContaining('joins flows F2 and F3, which are never taken together (gateway G chooses'),
      }),
    ]);
  });

  it('refuses a parallel join of an inclusive gateway default and another of its flows', async () => {
    const xml = diamond('inclusiveGateway', '<bpmn:parallelGateway id="J" />').replace(
      '<bpmn:inclusiveGateway id="G" />',
      '<bpmn:inclusiveGateway id="G" default="ToB" />',
    );
    const fixed = xml.replace(
      /<bpmn:sequenceFlow id="ToB" sourceRef="G" targetRef="B">[\s\S]*?<\/bpmn:sequenceFlow>/,
      flow('ToB', 'G', 'B'),
    );
    expect(errorsOf(await compileDiagnostics(fixed))).toEqual([
      expect.objectContaining({ elementId: 'J', message: expect.stringContaining('(gateway G chooses between them)') }),
    ]);
  });

  it('accepts a parallel join of two conditional flows of an inclusive gateway (both may hold)', async () => {
    expect((await compilePlan(diamond('inclusiveGateway', '<bpmn:parallelGateway id="J" />'))).plan.steps).toHaveLength(6);
  });
});

describe('checkSoundness: steps reached by several flows at once', () => {
  it('refuses a task entered directly by both branches of a parallel fork', async () => {
    expect(await compileDiagnostics(unsound, { processId: 'and-into-task' })).toEqual([
      {
        elementId: 'Notify',
        severity: 'error',
        message:
          'Service task Notify can receive flows FromLeft and FromRight at the same time: BPMN would run it once for each, Baton once. Join them first with a parallel or inclusive gateway',
      },
    ]);
  });

  it.each([
    ['an end event', '<bpmn:endEvent id="J" />'],
    ['a terminate end event', '<bpmn:endEvent id="J"><bpmn:terminateEventDefinition /></bpmn:endEvent>'],
    ['an exclusive merge', '<bpmn:exclusiveGateway id="J" />'],
  ])('refuses %s entered by both branches of a parallel fork', async (_what, target) => {
    expect(errorsOf(await compileDiagnostics(diamond('parallelGateway', target)))).toEqual([
      expect.objectContaining({
        elementId: 'J',
        message: expect.stringContaining('can receive flows FromA and FromB at the same time'),
      }),
    ]);
  });

  it('refuses a task entered by two flows of an inclusive gateway that may both hold', async () => {
    expect(errorsOf(await compileDiagnostics(diamond('inclusiveGateway', task('J'))))).toEqual([
      expect.objectContaining({ elementId: 'J' }),
    ]);
  });

  it('accepts a task or end event merging the two sides of an exclusive choice', async () => {
    await compilePlan(diamond('exclusiveGateway', task('J')));
    await compilePlan(diamond('exclusiveGateway', '<bpmn:endEvent id="J" />'));
  });

  it('accepts an inclusive join after a parallel fork', async () => {
    await compilePlan(diamond('parallelGateway', '<bpmn:inclusiveGateway id="J" />'));
  });

  it('accepts nested choices inside parallel branches', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:parallelGateway id="Fork" />',
        '<bpmn:exclusiveGateway id="X" default="X2" />',
        task('A'),
        task('B'),
        '<bpmn:exclusiveGateway id="XM" />',
        task('C'),
        '<bpmn:parallelGateway id="Join" />',
        '<bpmn:endEvent id="E" />',
        flow('F0', 'S', 'Fork'),
        flow('F1', 'Fork', 'X'),
        flow('F2', 'Fork', 'C'),
        flow('X1', 'X', 'A', '${a}'),
        flow('X2', 'X', 'B'),
        flow('F3', 'A', 'XM'),
        flow('F4', 'B', 'XM'),
        flow('F5', 'XM', 'Join'),
        flow('F6', 'C', 'Join'),
        flow('F7', 'Join', 'E'),
      ].join('\n'),
    );
    expect((await compilePlan(xml)).warnings).toEqual([]);
  });

  it('stays fast on many exclusive choices in a row, then reports the real problem', async () => {
    const count = 40;
    const lines = ['<bpmn:startEvent id="S" />', '<bpmn:parallelGateway id="Fork" />', flow('F0', 'S', 'Fork')];
    let previous = 'Fork';
    for (let i = 0; i < count; i++) {
      lines.push(
        `<bpmn:exclusiveGateway id="X${i}" default="X${i}b" />`,
        task(`A${i}`),
        task(`B${i}`),
        `<bpmn:exclusiveGateway id="M${i}" />`,
      );
      lines.push(flow(`In${i}`, previous, `X${i}`), flow(`X${i}a`, `X${i}`, `A${i}`, '${a}'), flow(`X${i}b`, `X${i}`, `B${i}`));
      lines.push(flow(`A${i}M`, `A${i}`, `M${i}`), flow(`B${i}M`, `B${i}`, `M${i}`));
      previous = `M${i}`;
    }
    lines.push(
      task('Side'),
      flow('ToSide', 'Fork', 'Side'),
      task('Both'),
      flow('L', previous, 'Both'),
      flow('R', 'Side', 'Both'),
    );
    const started = performance.now();
    const errors = errorsOf(await compileDiagnostics(processXml(lines.join('\n'))));
    expect(errors).toEqual([
      expect.objectContaining({
        elementId: 'Both',
        message: expect.stringContaining('can receive flows L and R at the same time'),
      }),
    ]);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('runs only once the graph is otherwise valid (one problem, one message)', async () => {
    const broken = unsound.replace('<bpmn:startEvent id="S1" />', '<bpmn:startEvent id="S1" /><bpmn:userTask id="U" />');
    const messages = (await compileDiagnostics(broken, { processId: 'xor-into-and' })).map((d) => d.message);
    expect(messages.some((m) => m.includes('never taken together'))).toBe(false);
  });

  it('skips the check with a warning when choices multiply beyond what it can track', async () => {
    // Each gateway has three ways out; two merge again and one ends, so no choice ever folds away.
    const lines = ['<bpmn:startEvent id="S" />'];
    let previous = 'S';
    for (let i = 0; i < 10; i++) {
      lines.push(
        `<bpmn:exclusiveGateway id="X${i}" default="X${i}c" />`,
        task(`A${i}`),
        task(`B${i}`),
        `<bpmn:endEvent id="Q${i}" />`,
        `<bpmn:exclusiveGateway id="M${i}" />`,
      );
      lines.push(
        flow(`In${i}`, previous, `X${i}`),
        flow(`X${i}a`, `X${i}`, `A${i}`, '${a}'),
        flow(`X${i}b`, `X${i}`, `B${i}`, '${b}'),
        flow(`X${i}c`, `X${i}`, `Q${i}`),
      );
      lines.push(flow(`A${i}M`, `A${i}`, `M${i}`), flow(`B${i}M`, `B${i}`, `M${i}`));
      previous = `M${i}`;
    }
    lines.push('<bpmn:endEvent id="E" />', flow('Last', previous, 'E'));
    const { warnings } = await compilePlan(processXml(lines.join('\n')));
    expect(warnings).toEqual([
      expect.objectContaining({
        elementId: 'p',
        severity: 'warning',
        message: expect.stringContaining('branches too much to check its joins'),
      }),
    ]);
  });
});

describe('checkSoundness: boundary events that end their path', () => {
  /** S -> fork G -> A, B -> join J -> E; boundary Bd on A, with no outgoing flow or one to end event BdEnd */
  const forkWithBoundary = (interrupting: boolean, ending: boolean) =>
    processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:parallelGateway id="G" />',
        task('A'),
        task('B'),
        `<bpmn:boundaryEvent id="Bd" attachedToRef="A" cancelActivity="${interrupting}"><bpmn:messageEventDefinition messageRef="M" /></bpmn:boundaryEvent>`,
        '<bpmn:parallelGateway id="J" />',
        '<bpmn:endEvent id="E" />',
        flow('F0', 'S', 'G'),
        flow('ToA', 'G', 'A'),
        flow('ToB', 'G', 'B'),
        flow('FromA', 'A', 'J'),
        flow('FromB', 'B', 'J'),
        flow('Out', 'J', 'E'),
        ...(ending ? [] : ['<bpmn:endEvent id="BdEnd" />', flow('FromBd', 'Bd', 'BdEnd')]),
      ].join('\n'),
    ).replace('<bpmn:process', '<bpmn:message id="M" name="m" />\n<bpmn:process');

  it('reads a boundary without outgoing flows as one whose path goes straight to an end event', async () => {
    for (const interrupting of [true, false]) {
      const ending = await compilePlan(forkWithBoundary(interrupting, true));
      const withEnd = await compilePlan(forkWithBoundary(interrupting, false));
      const boundary = ending.plan.steps.find((s) => s.id === 'Bd');
      expect(boundary?.boundary).toMatchObject({ attachedTo: 'A', interrupting });
      expect(ending.plan.flows.filter((f) => f.source === 'Bd')).toEqual([]);
      expect(ending.warnings).toEqual(withEnd.warnings);
      expect(ending.plan.steps.find((s) => s.id === 'J')).toEqual(withEnd.plan.steps.find((s) => s.id === 'J'));
    }
  });
});
