// Builds the bpmn-js instances of the designer with Baton's modules and moddle extensions.
import Modeler from 'bpmn-js/lib/Modeler';
import NavigatedViewer from 'bpmn-js/lib/NavigatedViewer';
import camundaModdle from 'camunda-bpmn-moddle/resources/camunda.json';
import minimapModule from 'diagram-js-minimap';
import batonModdle from './baton-moddle/baton.json';
import type { DiagramHost } from './diagram-services.ts';
import heatmapModule from './heatmap/index.ts';
import lintModule from './lint/index.ts';
import propertiesModule from './properties/index.ts';
import statusModule from './status/index.ts';

// Camunda's attributes (camunda:topic, camunda:taskPriority) and ours (baton:retries) are
// known to the model, so they survive import/export and edit as plain properties.
const moddleExtensions = { camunda: camundaModdle, baton: batonModdle };

export function createModeler(container: HTMLElement): DiagramHost {
  return new Modeler({
    container,
    additionalModules: [minimapModule, lintModule, propertiesModule],
    moddleExtensions,
  }) as unknown as DiagramHost;
}

/** Read-only canvas (pan and zoom) for instances and the heatmap. */
export function createViewer(container: HTMLElement): DiagramHost {
  return new NavigatedViewer({
    container,
    additionalModules: [statusModule, heatmapModule],
    moddleExtensions,
  }) as unknown as DiagramHost;
}
