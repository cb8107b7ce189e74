// People's groups, from BATON_GROUPS: which candidate groups of user tasks a person's token
// answers for. Groups name members by token name, so a token configured in BATON_TOKENS and
// one created with the CLI join groups the same way.

/** user name → the groups they belong to */
export type GroupDirectory = ReadonlyMap<string, readonly string[]>;

const NAME = /^[\w.@-]{1,100}$/;

/**
 * BATON_GROUPS: comma-separated `group=member|member` entries, e.g.
 * `sales=alice|bob,managers=alice`. A group may be listed more than once; its members add up.
 */
export function parseGroups(raw: string | undefined): GroupDirectory {
  const groupsOf = new Map<string, string[]>();
  if (!raw || raw.trim() === '') return groupsOf;
  raw.split(',').forEach((entry, i) => {
    const [group = '', members = '', ...rest] = entry.trim().split('=');
    const names = members.split('|').map((m) => m.trim());
    if (!NAME.test(group.trim()) || rest.length > 0 || names.some((m) => !NAME.test(m)))
      throw new Error(
        `BATON_GROUPS entry ${i + 1} ("${entry.trim()}"): write group=member|member, names of letters, digits, _ . @ - (e.g. sales=alice|bob)`,
      );
    for (const member of names) {
      const groups = groupsOf.get(member) ?? [];
      if (!groups.includes(group.trim())) groups.push(group.trim());
      groupsOf.set(member, groups);
    }
  });
  return groupsOf;
}
