// Some tools bind our extension prefixes to other namespaces (Activiti exports
// xmlns:camunda="http://activiti.org/bpmn"). bpmn-js then cannot export the diagram
// ("no namespace uri given for prefix"), so before import such a prefix is renamed
// everywhere in the document; the namespace URIs, and so the meaning, stay the same.

const OUR_PREFIXES: Record<string, string> = {
  camunda: 'http://camunda.org/schema/1.0/bpmn',
  baton: 'https://baton.dev/schema/bpmn/1.0',
};

export function renameForeignPrefixes(xml: string): string {
  let out = xml;
  for (const [prefix, uri] of Object.entries(OUR_PREFIXES)) {
    const declared = new RegExp(`xmlns:${prefix}="([^"]*)"`).exec(out);
    if (!declared || declared[1] === uri) continue;
    let renamed = `${prefix}_foreign`;
    while (out.includes(`${renamed}:`)) renamed += '_';
    // Element names (<p:x, </p:x), attribute names ( p:x=) and the declaration itself.
    out = out
      .replace(new RegExp(`(<\\/?)${prefix}:`, 'g'), `$1${renamed}:`)
      .replace(new RegExp(`(\\s)${prefix}:([\\w.-]+\\s*=)`, 'g'), `$1${renamed}:$2`)
      .replace(new RegExp(`xmlns:${prefix}=`, 'g'), `xmlns:${renamed}=`);
  }
  return out;
}
