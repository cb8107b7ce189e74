import DiffMarkers from './diff-markers.ts';

export default {
  __init__: ['diffMarkers'],
  diffMarkers: ['type', DiffMarkers],
};
