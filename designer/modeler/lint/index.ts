import LintMarkers from './lint-markers.ts';
import ProblemFixes from './problem-fixes.ts';

export default {
  __init__: ['lintMarkers'],
  lintMarkers: ['type', LintMarkers],
  problemFixes: ['type', ProblemFixes],
};
