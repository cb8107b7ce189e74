// A deployed definition with a heatmap: how many instances reached each element.
import { html, nothing } from 'lit';
import type { ApiError } from '../client/api-client.ts';
import { api } from '../client/api-client.ts';
import { pollEvery } from '../client/live.ts';
import type { Definition, Heatmap } from '../client/types.ts';
import { createViewer } from '../modeler/create-modeler.ts';
import type { Canvas, DiagramHost } from '../modeler/diagram-services.ts';
import { fitViewport } from '../modeler/fit-viewport.ts';
import type HeatmapOverlays from '../modeler/heatmap/heatmap-overlays.ts';
import { formatTime, LightElement } from './light-element.ts';
import './baton-start-form.ts';
import { layoutWhenMissing } from '../modeler/auto-layout.ts';

export class BatonDefinitionView extends LightElement {
  static override properties = {
    definitionKey: { type: String },
    version: { type: Number },
    definition: { state: true },
    latestVersion: { state: true },
    heatmap: { state: true },
    error: { state: true },
  };
  declare definitionKey: string;
  declare version: number | undefined;
  declare definition: Definition | undefined;
  declare latestVersion: number;
  declare heatmap: Heatmap | undefined;
  declare error: string;
  private viewer: DiagramHost | undefined;
  private stop: (() => void) | undefined;

  constructor() {
    super();
    this.definitionKey = '';
    this.version = undefined;
    this.definition = undefined;
    this.latestVersion = 0;
    this.heatmap = undefined;
    this.error = '';
  }

  override async firstUpdated(): Promise<void> {
    this.viewer = createViewer(this.querySelector('.canvas') as HTMLElement);
    try {
      const latest = await api.getDefinition(this.definitionKey);
      this.latestVersion = latest.version;
      this.definition =
        this.version && this.version !== latest.version ? await api.getDefinition(this.definitionKey, this.version) : latest;
      await this.viewer.importXML((await layoutWhenMissing(this.definition.xml)).xml);
      fitViewport(this.viewer.get<Canvas>('canvas'));
    } catch (err) {
      this.error = (err as ApiError).message;
      return;
    }
    // The counts of the version drawn: element ids may mean other things in other versions.
    const version = this.definition.version;
    this.stop = pollEvery(
      () => api.getHeatmap(this.definitionKey, version),
      (heatmap) => {
        this.heatmap = heatmap;
        this.viewer?.get<HeatmapOverlays>('heatmapOverlays').show(heatmap);
      },
      (err: ApiError) => (this.error = err.message),
      2000,
    );
  }

  override disconnectedCallback(): void {
    this.stop?.();
    this.viewer?.destroy();
    super.disconnectedCallback();
  }

  override render() {
    const d = this.definition;
    const counts = Object.entries(this.heatmap?.instances ?? {});
    // A definition with more instances than the heatmap counts: say which ones it shows.
    const sample = this.heatmap?.sample;
    const sampled = sample && sample.size >= sample.limit ? sample.size : 0;
    return html`<section class="page definition-view">
      <div class="page-head">
        <h1>${this.definitionKey} ${d ? html`<small>version ${d.version}${d.version === this.latestVersion ? ' (latest)' : ''}</small>` : nothing}</h1>
        <div class="actions"><a href="#/instances?definitionKey=${encodeURIComponent(this.definitionKey)}">Instances</a></div>
      </div>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${
        d
          ? html`<p class="meta">fingerprint <code title=${d.fingerprint}>${d.fingerprint.slice(0, 12)}</code> · deployed ${formatTime(d.deployedAt)}
        · ${sampled ? `the newest ${sampled.toLocaleString('en-US')} instances` : 'instances'}: ${counts.length ? counts.map(([s, n]) => html`<span class="status status-${s}">${s} ${n}</span> `) : 'none yet'}</p>`
          : nothing
      }
      ${
        this.latestVersion > 1
          ? html`<nav class="versions" aria-label="Versions">Versions:
        ${Array.from({ length: this.latestVersion }, (_, i) => i + 1).map((v) =>
          v === d?.version
            ? html`<strong>v${v}</strong>`
            : html`<a href="#/definitions/${encodeURIComponent(this.definitionKey)}?version=${v}">v${v}</a>`,
        )}
      </nav>`
          : nothing
      }
      <div class="canvas viewer" aria-label="Heatmap: instances per element"></div>
      ${d ? html`<baton-start-form .definitionKey=${this.definitionKey}></baton-start-form>` : nothing}
    </section>`;
  }
}

customElements.define('baton-definition-view', BatonDefinitionView);
