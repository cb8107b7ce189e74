import LintMarkers from './lint-markers.ts';

export default {
  __init__: ['lintMarkers'],
  lintMarkers: ['type', LintMarkers],
};
