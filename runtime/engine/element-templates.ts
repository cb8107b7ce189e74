// Publishing an element template (docs/workers.md, "Element templates"): Camunda's
// element-template schema checks it (@bpmn-io/element-templates-validator, the Camunda 7 or
// the Zeebe schema as its $schema says), Baton checks that it binds a topic, the store keeps
// it under its id and version. The designer offers the templates; lint and the designer read
// which topics they bind.
import {
  getSchemaVersion,
  getZeebeSchemaVersion,
  validate,
  validateZeebe,
  type TemplateValidationError,
} from '@bpmn-io/element-templates-validator';
import type { Engine } from './context.ts';
import { publishElementTemplate, topicsWithTemplates, type ElementTemplateRow } from '../store/element-templates.ts';
import { TemplateDialect, templateDialect, templateTopic } from '../worker/element-templates.ts';
import { BatonError } from '../shared/errors.ts';

/** What the API's schema (schemas/api/element-template.schema.json) has already checked. */
export interface ElementTemplate {
  $schema?: string;
  id: string;
  name: string;
  version?: number;
  properties: unknown[];
  [field: string]: unknown;
}

export interface PublishResult {
  /** false: this id and version already held the same JSON */
  created: boolean;
  row: ElementTemplateRow;
}

export async function publishTemplate(
  engine: Engine,
  template: ElementTemplate,
  publishedBy: string | null,
): Promise<PublishResult> {
  const dialect = templateDialect(template);
  refuseInvalid(template, dialect);
  const bound = templateTopic(template);
  if (!bound.ok)
    throw new BatonError('validation', bound.message, [{ path: '/properties', message: bound.message, binding: bound.binding }]);
  const version = template.version ?? null;
  const result = await publishElementTemplate(engine.pool, {
    templateId: template.id,
    version,
    dialect,
    topic: bound.topic,
    template,
    publishedBy,
  });
  const named = `element template "${template.id}"${version === null ? ' (no version)' : ` version ${version}`}`;
  if (!result.ok) {
    throw new BatonError(
      'conflict',
      `The ${named} is already published with other content (on ${result.row.published_at.toISOString()}): published versions do not change, so bump "version" to publish the change`,
      { templateId: template.id, version, publishedAt: result.row.published_at.toISOString() },
    );
  }
  if (result.created)
    engine.log.info({ templateId: template.id, version, topic: bound.topic, publishedBy }, 'element_template:published');
  return { created: result.created, row: result.row };
}

/**
 * Of the given topics, those no worker fetched within the activity window and no template
 * binds: a task with such a topic waits until someone starts a worker for it.
 */
export async function findUnservedTopics(engine: Engine, topics: readonly string[]): Promise<Set<string>> {
  const wanted = [...new Set(topics)];
  if (wanted.length === 0) return new Set();
  const [activity, templated] = await Promise.all([engine.fetchActivity.read(), topicsWithTemplates(engine.pool, wanted)]);
  const fetched = new Set(activity.map((a) => a.topic));
  return new Set(wanted.filter((t) => !fetched.has(t) && !templated.has(t)));
}

function refuseInvalid(template: ElementTemplate, dialect: TemplateDialect): void {
  const zeebe = dialect === TemplateDialect.zeebe;
  const result = zeebe ? validateZeebe(template) : validate(template);
  if (result.valid) return;
  // validate() accepts one template or an array of them; the array alternative's complaints say nothing here.
  const errors = (result.errors ?? []).filter((e) => !(e.instancePath === '' && e.schemaPath.startsWith('#/oneOf')));
  const details = (errors.length > 0 ? errors : (result.errors ?? [])).map(detailOf);
  const schema = zeebe
    ? `Zeebe element-template schema ${getZeebeSchemaVersion()}`
    : `Camunda 7 element-template schema ${getSchemaVersion()}`;
  // A Zeebe template can break dozens of rules at once: the message names the first few, details has all.
  const shown = details.slice(0, 5).map((d) => `${d.path} ${d.message}`);
  if (details.length > shown.length) shown.push(`and ${details.length - shown.length} more in details`);
  throw new BatonError(
    'validation',
    `Element template "${template.id}" does not follow the ${schema}: ${shown.join('; ')}`,
    details,
  );
}

function detailOf(e: TemplateValidationError): { path: string; message: string } {
  return { path: e.instancePath || '/', message: e.message ?? e.keyword };
}
