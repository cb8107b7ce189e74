// Builds the bpmn-js instances of the designer with Baton's modules and moddle extensions.
import Modeler from 'bpmn-js/lib/Modeler';
import NavigatedViewer from 'bpmn-js/lib/NavigatedViewer';
import {
  BpmnPropertiesPanelModule,
  BpmnPropertiesProviderModule,
  CamundaPlatformPropertiesProviderModule,
  ZeebePropertiesProviderModule,
} from 'bpmn-js-properties-panel';
import {
  CloudElementTemplatesPropertiesProviderModule,
  ElementTemplatesPropertiesProviderModule,
} from 'bpmn-js-element-templates';
import elementTemplateChooserModule from '@bpmn-io/element-template-chooser';
import camundaPlatformBehaviors from 'camunda-bpmn-js-behaviors/lib/camunda-platform';
import camundaCloudBehaviors from 'camunda-bpmn-js-behaviors/lib/camunda-cloud';
import camundaModdle from 'camunda-bpmn-moddle/resources/camunda.json';
import zeebeModdle from 'zeebe-bpmn-moddle/resources/zeebe.json';
import minimapModule from 'diagram-js-minimap';
import tokenSimulationModule from 'bpmn-js-token-simulation/lib/modeler';
import batonModdle from './baton-moddle/baton.json';
import type { Dialect } from './dialect.ts';
import type { DiagramHost } from './diagram-services.ts';
import compareModule from './compare/index.ts';
import heatmapModule from './heatmap/index.ts';
import lintModule from './lint/index.ts';
import batonPropertiesModule from './properties/index.ts';
import statusModule from './status/index.ts';
import templatesModule from './templates/index.ts';
import runnableModule from './runnable/index.ts';

// The dialect's attributes (camunda:topic, zeebe:taskDefinition) and ours (baton:retries) are
// known to the model, so they survive import/export and the panel edits them. One modeler
// knows one dialect: camunda's and zeebe's descriptors cannot share a model.
const DIALECT_MODULES = {
  camunda7: {
    moddle: { camunda: camundaModdle },
    modules: [CamundaPlatformPropertiesProviderModule, camundaPlatformBehaviors, ElementTemplatesPropertiesProviderModule],
  },
  zeebe: {
    moddle: { zeebe: zeebeModdle },
    modules: [ZeebePropertiesProviderModule, camundaCloudBehaviors, CloudElementTemplatesPropertiesProviderModule],
  },
};

export interface ModelerOptions {
  dialect: Dialect;
  /** where the properties panel is drawn */
  propertiesParent: HTMLElement;
}

export function createModeler(container: HTMLElement, options: ModelerOptions): DiagramHost {
  const dialect = DIALECT_MODULES[options.dialect];
  return new Modeler({
    container,
    additionalModules: [
      minimapModule,
      lintModule,
      compareModule,
      BpmnPropertiesPanelModule,
      BpmnPropertiesProviderModule,
      ...dialect.modules,
      // The workers' element templates: the panel's Template group, its chooser, the replace menu.
      elementTemplateChooserModule,
      templatesModule,
      runnableModule,
      batonPropertiesModule,
      // Walks the diagram before deploying: tokens, gateway choices, events fired by hand.
      tokenSimulationModule,
    ],
    moddleExtensions: { ...dialect.moddle, baton: batonModdle },
    propertiesPanel: { parent: options.propertiesParent },
  }) as unknown as DiagramHost;
}

/** Read-only canvas (pan and zoom) for instances and the heatmap. */
export function createViewer(container: HTMLElement): DiagramHost {
  return new NavigatedViewer({
    container,
    additionalModules: [statusModule, heatmapModule],
    moddleExtensions: { camunda: camundaModdle, baton: batonModdle },
  }) as unknown as DiagramHost;
}
