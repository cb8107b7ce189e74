import HeatmapOverlays from './heatmap-overlays.ts';

export default {
  heatmapOverlays: ['type', HeatmapOverlays],
};
