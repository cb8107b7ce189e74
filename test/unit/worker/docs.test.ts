// docs/workers.md must keep up with the SDK: every option and every log event is documented.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);
const doc = readFileSync(new URL('docs/workers.md', root), 'utf8');
const sdkDir = new URL('runtime/worker/', root);
const sources = readdirSync(sdkDir)
  .filter((f) => f.endsWith('.ts'))
  .map((f) => readFileSync(new URL(f, sdkDir), 'utf8'));

describe('docs/workers.md', () => {
  it('given the WorkerOptions interface, then every option has a row in the options table', () => {
    const types = readFileSync(new URL('types.ts', sdkDir), 'utf8');
    const body = types.slice(types.indexOf('export interface WorkerOptions'), types.indexOf('export interface SubscribeOptions'));
    const options = [...body.matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]);
    expect(options.length).toBeGreaterThan(5);
    for (const option of options) expect(doc, option).toContain(`| \`${option}\` |`);
  });

  it('given the SDK sources, then every log event they write is listed', () => {
    const events = new Set(sources.flatMap((s) => [...s.matchAll(/'((?:task|fetch|worker):[a-z_]+)'/g)].map((m) => m[1]!)));
    expect(events.size).toBeGreaterThan(10);
    for (const event of events) expect(doc, event).toContain(`\`${event}\``);
  });
});
