import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, task } from './bpmn-helpers.ts';

const throwLink = (id: string, name: string) =>
  `<bpmn:intermediateThrowEvent id="${id}"><bpmn:linkEventDefinition name="${name}" /></bpmn:intermediateThrowEvent>`;
const catchLink = (id: string, name: string) =>
  `<bpmn:intermediateCatchEvent id="${id}"><bpmn:linkEventDefinition name="${name}" /></bpmn:intermediateCatchEvent>`;

/** S -> A -> throw "next" ... catch "next" -> B -> E */
function linked(throwName = 'next', extra = ''): string {
  return processXml(
    [
      '<bpmn:startEvent id="S" />',
      task('A'),
      throwLink('Jump', throwName),
      catchLink('Land', 'next'),
      task('B'),
      '<bpmn:endEvent id="E" />',
      flow('f1', 'S', 'A'),
      flow('f2', 'A', 'Jump'),
      flow('f3', 'Land', 'B'),
      flow('f4', 'B', 'E'),
      extra,
    ].join('\n'),
  );
}

describe('link events', () => {
  it('joins a link throw to the catch of its name with a flow of its own, both passing at once', async () => {
    const { plan } = await compilePlan(linked());
    expect(plan.flows).toContainEqual(expect.objectContaining({ id: 'link:Jump', source: 'Jump', target: 'Land' }));
    const step = (id: string) => plan.steps.find((s) => s.id === id);
    expect(step('Jump')).toMatchObject({ kind: 'passThrough', outgoing: ['link:Jump'] });
    expect(step('Land')).toMatchObject({ kind: 'passThrough', incoming: ['link:Jump'] });
  });

  it('refuses a throw whose name no catch has, naming the name', async () => {
    expect(errorsOf(await compileDiagnostics(linked('nowhere')))).toEqual([
      expect.objectContaining({
        elementId: 'Jump',
        message: expect.stringContaining('jumps to the link "nowhere", but no link catch event of that name is in its process'),
      }),
      expect.objectContaining({
        elementId: 'Land',
        message: expect.stringContaining('is the target of no link throw event: add a link throw event named "next"'),
      }),
    ]);
  });

  it('refuses two catches of one name in one scope, and a catch with an incoming sequence flow', async () => {
    const twice = linked('next', catchLink('Land2', 'next'));
    expect(errorsOf(await compileDiagnostics(twice)).map((d) => d.elementId)).toContain('Land2');
    const fed = linked('next', flow('f5', 'S', 'Land'));
    expect(errorsOf(await compileDiagnostics(fed))).toContainEqual(
      expect.objectContaining({ elementId: 'Land', message: expect.stringContaining('has incoming sequence flows (f5)') }),
    );
  });

  it('finds a loop made through a link like any cycle', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        task('Review'),
        '<bpmn:exclusiveGateway id="Ok" default="yes" />',
        throwLink('Again', 'rework'),
        catchLink('Rework', 'rework'),
        task('Fix'),
        '<bpmn:endEvent id="E" />',
        flow('f1', 'S', 'Review'),
        flow('f2', 'Review', 'Ok'),
        flow('yes', 'Ok', 'E'),
        flow('no', 'Ok', 'Again', '= rejected'),
        flow('f3', 'Rework', 'Fix'),
        flow('f4', 'Fix', 'Review'),
      ].join('\n'),
    );
    const { plan } = await compilePlan(xml);
    expect(plan.steps.find((s) => s.kind === 'loop')?.cycle?.steps).toEqual(
      expect.arrayContaining(['Review', 'Ok', 'Again', 'Rework', 'Fix']),
    );
  });
});
