// What Baton reads of an element template (Camunda's element-template JSON): the dialect it
// is written for and the topic it binds (docs/workers.md, "Element templates"). Pure, and part
// of the SDK package because the SDK may import nothing of the server; the server imports it
// from here, so both read a template the same way.

export const TemplateDialect = {
  /** Camunda 7: camunda:type = external and camunda:topic, as property bindings */
  camunda7: 'camunda7',
  /** Camunda 8: the type of zeebe:taskDefinition */
  zeebe: 'zeebe',
} as const;
export type TemplateDialect = (typeof TemplateDialect)[keyof typeof TemplateDialect];

/** The binding a topic needs, per dialect, as a template writes it. */
export const TOPIC_BINDING = {
  camunda7: { type: 'property', name: 'camunda:topic' },
  zeebe: { type: 'zeebe:taskDefinition', property: 'type' },
} as const;

/** Camunda 7 runs only external service tasks: a template must make the task one. */
const EXTERNAL_TYPE_BINDING = { type: 'property', name: 'camunda:type' } as const;

export type TemplateTopicResult =
  | { ok: true; dialect: TemplateDialect; topic: string }
  | { ok: false; dialect: TemplateDialect; message: string; binding: Record<string, string> };

interface TemplateProperty {
  value?: unknown;
  binding?: { type?: unknown; name?: unknown; property?: unknown };
}

/** `$schema` tells: Zeebe templates name the zeebe-element-templates-json-schema, anything else is Camunda 7. */
export function templateDialect(template: { $schema?: unknown }): TemplateDialect {
  return typeof template.$schema === 'string' && template.$schema.includes('zeebe-element-templates-json-schema')
    ? TemplateDialect.zeebe
    : TemplateDialect.camunda7;
}

function propertiesOf(template: { properties?: unknown }): TemplateProperty[] {
  return Array.isArray(template.properties)
    ? template.properties.filter((p): p is TemplateProperty => !!p && typeof p === 'object')
    : [];
}

function bindsTopic(dialect: TemplateDialect, p: TemplateProperty): boolean {
  const b = p.binding;
  if (!b) return false;
  if (dialect === TemplateDialect.camunda7) return b.type === 'property' && b.name === 'camunda:topic';
  // zeebe:taskDefinition:type is the older spelling of the same binding
  return (b.type === 'zeebe:taskDefinition' && b.property === 'type') || b.type === 'zeebe:taskDefinition:type';
}

/** The topic a template binds, or what to add so that it binds one. */
export function templateTopic(template: { $schema?: unknown; id?: unknown; properties?: unknown }): TemplateTopicResult {
  const dialect = templateDialect(template);
  const name = typeof template.id === 'string' ? `Element template "${template.id}"` : 'The element template';
  const binding = { ...TOPIC_BINDING[dialect] };
  const properties = propertiesOf(template);
  const topicProperty = properties.find((p) => bindsTopic(dialect, p));
  const shown = JSON.stringify(binding);
  if (!topicProperty) {
    return {
      ok: false,
      dialect,
      binding,
      message: `${name} binds no topic: add a property with "binding": ${shown} and the topic as its "value"`,
    };
  }
  const topic = typeof topicProperty.value === 'string' ? topicProperty.value.trim() : '';
  if (!topic || topic.length > 255 || topic.startsWith('=')) {
    return {
      ok: false,
      dialect,
      binding,
      message: `${name} binds ${shown} without a fixed topic: set its "value" to the topic (1 to 255 characters, not an expression)`,
    };
  }
  if (dialect === TemplateDialect.camunda7) {
    const type = properties.find((p) => p.binding?.type === 'property' && p.binding.name === 'camunda:type');
    if (type?.value !== 'external') {
      return {
        ok: false,
        dialect,
        binding: { ...EXTERNAL_TYPE_BINDING },
        message: `${name} binds camunda:topic but does not make the task external: add a property with "binding": ${JSON.stringify(EXTERNAL_TYPE_BINDING)} and "value": "external"`,
      };
    }
  }
  return { ok: true, dialect, topic };
}
