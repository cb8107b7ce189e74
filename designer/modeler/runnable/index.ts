// The replace menu (the wrench of the context pad) offers only what Baton runs: the element types
// the server refuses wherever they stand are taken out of bpmn-js's entries, so an analyst cannot
// turn a task into something deploy will refuse. Elements refused only in some positions (an
// escalation boundary on a task, an escalation start of a process) stay: lint names them there.
// The palette and the context pad's append entries offer nothing Baton refuses, so they stay.
import { REFUSED_REPLACEMENTS } from './refused.ts';

interface PopupMenu {
  registerProvider(id: string, priority: number, provider: unknown): void;
}

type Entries = Record<string, unknown>;

export class RunnableReplaceEntries {
  static $inject = ['popupMenu'];

  constructor(popupMenu: PopupMenu) {
    // After bpmn-js's own provider (priority 1000 runs first): a lower priority sees its entries.
    popupMenu.registerProvider('bpmn-replace', 500, this);
  }

  getPopupMenuEntries(): (entries: Entries) => Entries {
    return (entries) => Object.fromEntries(Object.entries(entries).filter(([id]) => !REFUSED_REPLACEMENTS.has(id)));
  }
}

export default {
  __init__: ['runnableReplaceEntries'],
  runnableReplaceEntries: ['type', RunnableReplaceEntries],
};
