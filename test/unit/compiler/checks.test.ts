import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, task } from './bpmn-helpers.ts';

async function errorsFor(...lines: string[]) {
  return errorsOf(await compileDiagnostics(processXml(lines.join('\n'))));
}

describe('checkGraph: start events', () => {
  it('requires a start event', async () => {
    expect(await errorsFor(task('T'), '<bpmn:endEvent id="E" />', flow('F', 'T', 'E'))).toContainEqual({
      elementId: 'p',
      severity: 'error',
      message:
        'Process p has no start event: add one start event without a trigger (or a timer start event) where instances begin',
    });
  });

  it('reports every none start event after the first', async () => {
    const errors = await errorsFor(
      '<bpmn:startEvent id="S1" />',
      '<bpmn:startEvent id="S2" name="Second" />',
      '<bpmn:startEvent id="S3" />',
      task('T'),
      flow('F1', 'S1', 'T'),
      flow('F2', 'S2', 'T'),
      flow('F3', 'S3', 'T'),
    );
    expect(errors.filter((e) => /second none start event/.test(e.message))).toEqual([
      expect.objectContaining({
        elementId: 'S2',
        message: 'Start event S2 "Second" is a second none start event (the first is S1): keep exactly one',
      }),
      expect.objectContaining({ elementId: 'S3' }),
    ]);
  });

  it('refuses incoming flows on a start event', async () => {
    expect(
      await errorsFor(
        '<bpmn:startEvent id="S" />',
        '<bpmn:parallelGateway id="G" />',
        flow('F1', 'S', 'G'),
        task('T'),
        flow('F2', 'T', 'S'),
      ),
    ).toContainEqual(
      expect.objectContaining({
        elementId: 'S',
        message: expect.stringContaining('Start event S has incoming sequence flows (F2)'),
      }),
    );
  });
});

describe('checkGraph: connections', () => {
  it('refuses a step without incoming flow (it could never run)', async () => {
    expect(
      await errorsFor('<bpmn:startEvent id="S" />', task('Orphan'), '<bpmn:endEvent id="E" />', flow('F', 'S', 'E')),
    ).toEqual([
      {
        elementId: 'Orphan',
        severity: 'error',
        message: 'Service task Orphan has no incoming sequence flow, so it can never run: connect it or delete it',
      },
    ]);
  });

  it('refuses a gateway without outgoing flow', async () => {
    expect(await errorsFor('<bpmn:startEvent id="S" />', '<bpmn:exclusiveGateway id="G" />', flow('F', 'S', 'G'))).toEqual([
      {
        elementId: 'G',
        severity: 'error',
        message: 'Gateway G has no outgoing sequence flow: connect it to the next step or an end event',
      },
    ]);
  });

  it('refuses outgoing flows on an end event', async () => {
    expect(
      await errorsFor(
        '<bpmn:startEvent id="S" />',
        '<bpmn:endEvent id="E" />',
        task('T'),
        flow('F1', 'S', 'E'),
        flow('F2', 'E', 'T'),
      ),
    ).toContainEqual(
      expect.objectContaining({
        elementId: 'E',
        message: expect.stringContaining('End event E has outgoing sequence flows (F2)'),
      }),
    );
  });

  it('lets a task (and a start event) end the path implicitly', async () => {
    const { plan } = await compilePlan(processXml(['<bpmn:startEvent id="S" />', task('T'), flow('F', 'S', 'T')].join('\n')));
    expect(plan.steps.find((s) => s.id === 'T')?.outgoing).toEqual([]);
    expect((await compilePlan(processXml('<bpmn:startEvent id="S" />'))).plan.steps).toHaveLength(1);
  });
});

describe('checkGraph: default flows', () => {
  const gateway = (attributes: string) => [
    '<bpmn:startEvent id="S" />',
    `<bpmn:exclusiveGateway id="G" ${attributes} />`,
    task('A'),
    task('B'),
    flow('F0', 'S', 'G'),
    flow('ToA', 'G', 'A', '${a}'),
    flow('Other', 'A', 'B'),
  ];

  it('refuses a default flow that is not one of the gateway outgoing flows', async () => {
    expect(await errorsFor(...gateway('default="Other"'))).toEqual([
      {
        elementId: 'G',
        severity: 'error',
        message: 'Default flow Other of gateway G is not one of its outgoing flows (ToA): pick one of them',
      },
    ]);
  });

  it('refuses a default flow id that does not exist', async () => {
    expect(await errorsFor(...gateway('default="Ghost"'))).toEqual([
      {
        elementId: 'G',
        severity: 'error',
        message: 'Gateway G names default flow Ghost, which does not exist: pick one of its outgoing flows (ToA)',
      },
    ]);
  });
});
