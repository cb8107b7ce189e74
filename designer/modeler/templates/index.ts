import TemplateReplaceEntries from './template-replace-entries.ts';
import WorkerActivity from './worker-activity.ts';

export default {
  __init__: ['templateReplaceEntries', 'workerActivity'],
  templateReplaceEntries: ['type', TemplateReplaceEntries],
  workerActivity: ['type', WorkerActivity],
};
