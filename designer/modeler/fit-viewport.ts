// Fit-to-view that keeps the diagram clear of the palette and the minimap's toggle.
// canvas.zoom('fit-viewport') fits the diagram to the whole container, so a wide diagram's
// first element lands under the palette at the left (94 px wide, 20 px in), its last under
// the minimap's "Open minimap" button at the top right, and badges on the edges are cut.
import type { Canvas } from './diagram-services.ts';

/** Free space around the fitted diagram, in screen pixels. */
const MARGIN = 20;

/** Fits the whole diagram into view, leaving the palette and the minimap (when there are) and a margin free. */
export function fitViewport(canvas: Canvas): void {
  const { outer, inner } = canvas.viewbox();
  if (inner.width === 0 || inner.height === 0 || outer.width === 0 || outer.height === 0) return;
  const container = canvas.getContainer();
  const pad = {
    left: covered(container, '.djs-palette', 'left') + MARGIN,
    top: MARGIN,
    right: covered(container, '.djs-minimap', 'right') + MARGIN,
    bottom: MARGIN,
  };
  // A diagram that already fits where it is drawn keeps its place and scale, as with 'fit-viewport'.
  if (
    inner.x >= pad.left &&
    inner.y >= pad.top &&
    inner.x + inner.width <= outer.width - pad.right &&
    inner.y + inner.height <= outer.height - pad.bottom
  ) {
    canvas.viewbox({ x: 0, y: 0, width: outer.width, height: outer.height });
    return;
  }
  const scale = Math.min(
    1,
    (outer.width - pad.left - pad.right) / inner.width,
    (outer.height - pad.top - pad.bottom) / inner.height,
  );
  if (scale <= 0) {
    canvas.zoom('fit-viewport'); // a container narrower than the palette: nothing to leave free
    return;
  }
  canvas.viewbox({
    x: inner.x - pad.left / scale,
    y: inner.y - pad.top / scale,
    width: outer.width / scale,
    height: outer.height / scale,
  });
}

/** How far in from the container's given edge the control covers it; 0 without it (viewers have neither). */
function covered(container: HTMLElement, selector: string, edge: 'left' | 'right'): number {
  const control = container.querySelector(selector)?.getBoundingClientRect();
  if (!control || control.width === 0) return 0;
  const box = container.getBoundingClientRect();
  return Math.max(0, edge === 'left' ? control.right - box.left : box.right - control.left);
}
