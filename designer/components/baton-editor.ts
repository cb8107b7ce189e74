// One diagram in the modeler: autosaved draft, lint as you draw, deploy and start.
import { html, nothing } from 'lit';
import { api, ApiError } from '../client/api-client.ts';
import type { DeployResult, Diagnostic, LintResult } from '../client/types.ts';
import { createModeler } from '../modeler/create-modeler.ts';
import { renameForeignPrefixes } from '../modeler/foreign-prefixes.ts';
import type { DiagramHost, ElementRegistry, Canvas, Selection } from '../modeler/diagram-services.ts';
import { fitViewport } from '../modeler/fit-viewport.ts';
import type LintMarkers from '../modeler/lint/lint-markers.ts';
import { downloadText, LightElement } from './light-element.ts';
import './baton-problems-panel.ts';
import './baton-properties-panel.ts';
import './baton-start-form.ts';

const LINT_DELAY_MS = 300;
const AUTOSAVE_DELAY_MS = 1500;
const SAVE_RETRY_MS = 5000;

type SaveState = 'saved' | 'unsaved' | 'saving' | 'failed';

export class BatonEditor extends LightElement {
  static override properties = {
    diagramId: { type: String },
    name: { state: true },
    saveState: { state: true },
    lint: { state: true },
    linting: { state: true },
    deployed: { state: true },
    error: { state: true },
    importWarnings: { state: true },
    notice: { state: true },
    host: { state: true },
  };
  declare diagramId: string;
  declare name: string;
  declare saveState: SaveState;
  declare lint: LintResult | undefined;
  declare linting: boolean;
  declare deployed: DeployResult | undefined;
  declare error: string;
  declare importWarnings: string[];
  declare notice: string;
  declare host: DiagramHost | undefined;

  private lintTimer: ReturnType<typeof setTimeout> | undefined;
  private saveTimer: ReturnType<typeof setTimeout> | undefined;
  private lintSeq = 0;
  private saving: Promise<void> = Promise.resolve();

  constructor() {
    super();
    this.diagramId = '';
    this.name = '';
    this.saveState = 'saved';
    this.lint = undefined;
    this.linting = false;
    this.deployed = undefined;
    this.error = '';
    this.importWarnings = [];
    this.notice = '';
    this.host = undefined;
  }

  private readonly warnBeforeLeaving = (e: BeforeUnloadEvent) => {
    if (this.saveState === 'saved') return;
    e.preventDefault();
    e.returnValue = '';
  };

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('beforeunload', this.warnBeforeLeaving);
  }

  override disconnectedCallback(): void {
    window.removeEventListener('beforeunload', this.warnBeforeLeaving);
    clearTimeout(this.lintTimer);
    clearTimeout(this.saveTimer);
    // Leaving the editor inside the app saves at once: a change is never dropped silently.
    if (this.saveState !== 'saved' && this.host) void this.save().finally(() => this.host?.destroy());
    else this.host?.destroy();
    super.disconnectedCallback();
  }

  override async firstUpdated(): Promise<void> {
    const host = createModeler(this.querySelector('.canvas') as HTMLElement);
    host.on('commandStack.changed', () => this.onChange());
    this.host = host;
    try {
      const diagram = await api.getDiagram(this.diagramId);
      this.name = diagram.name;
      const { warnings } = await host.importXML(renameForeignPrefixes(diagram.xml));
      this.importWarnings = warnings.map((w) => (w as Error).message ?? String(w));
      fitViewport(host.get<Canvas>('canvas'));
      this.runLint();
    } catch (err) {
      this.error = err instanceof ApiError ? err.message : `The diagram could not be opened: ${(err as Error).message}`;
    }
  }

  private onChange(): void {
    this.saveState = 'unsaved';
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => void this.save(), AUTOSAVE_DELAY_MS);
    clearTimeout(this.lintTimer);
    this.lintTimer = setTimeout(() => this.runLint(), LINT_DELAY_MS);
  }

  private async currentXml(): Promise<string> {
    const { xml } = await this.host!.saveXML({ format: true });
    return xml ?? '';
  }

  /** Saves the draft; saves run one after another so an older XML never lands last. */
  save(): Promise<void> {
    clearTimeout(this.saveTimer);
    this.saving = this.saving.then(async () => {
      if (this.saveState === 'saved') return;
      this.saveState = 'saving';
      try {
        await api.saveDiagram(this.diagramId, await this.currentXml());
        if (this.saveState === 'saving') this.saveState = 'saved';
        if (this.error.startsWith('Not saved')) this.error = '';
      } catch (err) {
        this.saveState = 'failed';
        this.error = `Not saved: ${(err as ApiError).message}`;
        // Keep trying: the draft lands once the server answers again.
        clearTimeout(this.saveTimer);
        this.saveTimer = setTimeout(() => void this.save(), SAVE_RETRY_MS);
      }
    });
    return this.saving;
  }

  private runLint(): void {
    const seq = ++this.lintSeq;
    this.linting = true;
    void (async () => {
      try {
        const result = await api.lint(await this.currentXml());
        if (seq !== this.lintSeq) return; // a newer edit is being checked
        this.showProblems(result);
      } catch (err) {
        if (seq === this.lintSeq) this.error = `Lint failed: ${(err as ApiError).message}`;
      } finally {
        if (seq === this.lintSeq) this.linting = false;
      }
    })();
  }

  private showProblems(result: LintResult): void {
    this.lint = result;
    this.host?.get<LintMarkers>('lintMarkers').show([...result.diagnostics, ...result.warnings]);
  }

  private selectElement(elementId: string): void {
    const host = this.host;
    if (!host) return;
    const found = host.get<ElementRegistry>('elementRegistry').get(elementId);
    // The process is the canvas root: nothing to select or scroll to.
    const element = found === host.get<Canvas>('canvas').getRootElement() ? undefined : found;
    this.notice = element
      ? ''
      : `${elementId} is not drawn on the canvas: the problem concerns the process or the file as a whole`;
    if (!element) return;
    host.get<Selection>('selection').select(element);
    host.get<Canvas>('canvas').scrollToElement(element);
  }

  private async rename(e: Event): Promise<void> {
    const input = e.target as HTMLInputElement;
    const name = input.value.trim();
    if (!name || name === this.name) {
      input.value = this.name;
      return;
    }
    try {
      this.name = (await api.renameDiagram(this.diagramId, name)).name;
    } catch (err) {
      this.error = (err as ApiError).message;
      input.value = this.name;
    }
  }

  private async deploy(): Promise<void> {
    this.deployed = undefined;
    this.error = '';
    await this.save();
    try {
      this.deployed = await api.deploy(await this.currentXml());
      this.showProblems({ ok: true, diagnostics: [], warnings: this.deployed.warnings });
    } catch (err) {
      const apiError = err as ApiError;
      if (apiError.type === 'CompileError' && Array.isArray(apiError.details)) {
        this.showProblems({ ok: false, diagnostics: apiError.details as Diagnostic[], warnings: [] });
        this.error = `Deploy refused: ${apiError.details.length} problem(s), see below`;
      } else this.error = `Deploy failed: ${apiError.message}`;
    }
  }

  private async exportFile(kind: 'xml' | 'svg'): Promise<void> {
    const base = this.name.replace(/[^\w.-]+/g, '-') || 'diagram';
    if (kind === 'xml') downloadText(`${base}.bpmn`, await this.currentXml(), 'application/xml');
    else downloadText(`${base}.svg`, (await this.host!.saveSVG()).svg, 'image/svg+xml');
  }

  private command(name: 'undo' | 'redo'): void {
    this.host?.get<{ undo(): void; redo(): void }>('commandStack')[name]();
  }

  private renderDeployResult() {
    const d = this.deployed;
    if (!d) return nothing;
    return html`<div class="deploy-result" role="status">
      ${
        d.created
          ? html`Deployed <strong>${d.key}</strong> as <strong class="deploy-version">version ${d.version}</strong>`
          : html`Unchanged: <strong>${d.key}</strong> is already <strong class="deploy-version">version ${d.version}</strong>`
      }
      · fingerprint <code class="deploy-fingerprint" title=${d.fingerprint}>${d.fingerprint.slice(0, 12)}</code>
      · <a href="#/definitions/${encodeURIComponent(d.key)}">heatmap</a>
    </div>`;
  }

  override render() {
    const stateText = { saved: 'All changes saved', unsaved: 'Unsaved changes', saving: 'Saving…', failed: 'Not saved' }[
      this.saveState
    ];
    const problems = this.lint ? [...this.lint.diagnostics, ...this.lint.warnings] : [];
    return html`
      <div class="editor">
        <div class="toolbar" role="toolbar" aria-label="Diagram">
          <a href="#/diagrams" class="back">← Diagrams</a>
          <input class="diagram-name" aria-label="Diagram name" .value=${this.name} maxlength="255" @change=${(e: Event) => this.rename(e)} />
          <span class="save-state save-${this.saveState}" role="status">${stateText}</span>
          <span class="spacer"></span>
          <button @click=${() => this.command('undo')} title="Undo (Ctrl+Z)">Undo</button>
          <button @click=${() => this.command('redo')} title="Redo (Ctrl+Y)">Redo</button>
          <button @click=${() => this.save()}>Save</button>
          <button @click=${() => this.exportFile('xml')}>Export XML</button>
          <button @click=${() => this.exportFile('svg')}>Export SVG</button>
          <button class="primary deploy" @click=${() => this.deploy()}>Deploy</button>
        </div>
        ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
        ${this.notice ? html`<p class="notice" role="status">${this.notice}</p>` : nothing}
        ${
          this.importWarnings.length
            ? html`<details class="warning"><summary>${this.importWarnings.length} import warning(s)</summary>
          <ul>${this.importWarnings.map((w) => html`<li>${w}</li>`)}</ul></details>`
            : nothing
        }
        ${this.renderDeployResult()}
        <div class="editor-body">
          <div class="canvas" tabindex="0" aria-label="BPMN canvas"></div>
          <aside class="side">
            <baton-properties-panel .host=${this.host}></baton-properties-panel>
            ${this.deployed ? html`<baton-start-form .definitionKey=${this.deployed.key}></baton-start-form>` : nothing}
          </aside>
        </div>
        <baton-problems-panel .problems=${problems} .checking=${this.linting} .ok=${this.lint?.ok ?? null}
          @baton-select-element=${(e: CustomEvent<{ elementId: string }>) => this.selectElement(e.detail.elementId)}></baton-problems-panel>
      </div>
    `;
  }
}

customElements.define('baton-editor', BatonEditor);
