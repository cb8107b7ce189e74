import StepStatusMarkers from './step-status-markers.ts';

export default {
  stepStatusMarkers: ['type', StepStatusMarkers],
};
