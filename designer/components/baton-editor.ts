// One diagram in the modeler: autosaved draft, lint as you draw, deploy and start.
import { html, nothing } from 'lit';
import { api, ApiError } from '../client/api-client.ts';
import type { Definition, DeployResult, Diagnostic, LintResult } from '../client/types.ts';
import { createModeler } from '../modeler/create-modeler.ts';
import { diagramDialect, DIALECTS, type Dialect } from '../modeler/dialect.ts';
import { renameForeignPrefixes } from '../modeler/foreign-prefixes.ts';
import type { Canvas, DiagramElement, DiagramHost, ElementRegistry, Modeling, Selection } from '../modeler/diagram-services.ts';
import { fitViewport } from '../modeler/fit-viewport.ts';
import { processKeyFor } from '../modeler/new-diagram.ts';
import type DiffMarkers from '../modeler/compare/diff-markers.ts';
import type { DiagramDiff } from '../modeler/compare/diff-markers.ts';
import type LintMarkers from '../modeler/lint/lint-markers.ts';
import type ProblemFixes from '../modeler/lint/problem-fixes.ts';
import type WorkerActivity from '../modeler/templates/worker-activity.ts';
import { downloadText, LightElement } from './light-element.ts';
import './baton-problems-panel.ts';
import './baton-start-form.ts';
import { layoutNotice, layoutWhenMissing } from '../modeler/auto-layout.ts';

const LINT_DELAY_MS = 300;

const refusedText = (count: number): string => `Deploy refused: ${count} problem(s), see below`;
const AUTOSAVE_DELAY_MS = 1500;
/** How often the badges of which topics workers fetch are refreshed. */
const ACTIVITY_REFRESH_MS = 15_000;
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
    dialect: { state: true },
    deployedLatest: { state: true },
    difference: { state: true },
    comparing: { state: true },
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
  /** The canvas shows a generated layout the stored draft does not have yet: Save stores it. */
  private layoutUnsaved = false;
  declare host: DiagramHost | undefined;
  declare dialect: Dialect | undefined;
  /** the latest deployed version of the diagram's process key; null: none deployed */
  declare deployedLatest: Definition | null | undefined;
  /** what the canvas changes against deployedLatest */
  declare difference: DiagramDiff | undefined;
  /** the differences are marked on the canvas */
  declare comparing: boolean;

  private lintTimer: ReturnType<typeof setTimeout> | undefined;
  private saveTimer: ReturnType<typeof setTimeout> | undefined;
  private lintSeq = 0;
  private activityTimer: ReturnType<typeof setInterval> | undefined;
  /** the process key deployedLatest was looked up for */
  private lookedUpKey: string | undefined;
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
    this.dialect = undefined;
    this.deployedLatest = undefined;
    this.difference = undefined;
    this.comparing = false;
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
    clearInterval(this.activityTimer);
    // Leaving the editor inside the app saves at once: a change is never dropped silently.
    if (this.saveState !== 'saved' && this.host) void this.save().finally(() => this.host?.destroy());
    else this.host?.destroy();
    super.disconnectedCallback();
  }

  override async firstUpdated(): Promise<void> {
    try {
      const diagram = await api.getDiagram(this.diagramId);
      this.name = diagram.name;
      const xml = renameForeignPrefixes(diagram.xml);
      // The properties panel edits the dialect the file is written for.
      this.dialect = diagramDialect(xml);
      const host = createModeler(this.querySelector('.canvas') as HTMLElement, {
        dialect: this.dialect,
        propertiesParent: this.querySelector('.properties-panel') as HTMLElement,
      });
      host.on('commandStack.changed', () => this.onChange());
      this.querySelector('.properties-panel')?.addEventListener('keydown', this.onPanelKeys as EventListener, true);
      this.host = host;
      void this.loadTemplates(host, this.dialect);
      // The generated layout stays on the canvas only: the stored draft changes when the analyst saves.
      const layout = await layoutWhenMissing(xml);
      const { warnings } = await host.importXML(layout.xml);
      if (layout.laidOut) this.notice = layoutNotice(layout.notDrawn);
      this.layoutUnsaved = layout.laidOut;
      this.importWarnings = warnings.map((w) => (w as Error).message ?? String(w));
      fitViewport(host.get<Canvas>('canvas'));
      this.runLint();
      void this.showWorkerActivity();
      this.activityTimer = setInterval(() => void this.showWorkerActivity(), ACTIVITY_REFRESH_MS);
    } catch (err) {
      this.error = err instanceof ApiError ? err.message : `The diagram could not be opened: ${(err as Error).message}`;
    }
  }

  /** The workers' element templates of the diagram's dialect, for the chooser and the replace menu. */
  private async loadTemplates(host: DiagramHost, dialect: Dialect): Promise<void> {
    try {
      const templates = (await api.listElementTemplates()).filter(
        (t) => (/zeebe/i.test(t.$schema ?? '') ? 'zeebe' : 'camunda7') === dialect,
      );
      host.get<{ setTemplates(t: unknown[]): void }>('elementTemplatesLoader').setTemplates(templates);
    } catch (err) {
      this.notice = `Element templates could not be loaded: ${(err as Error).message}`;
    }
  }

  private async showWorkerActivity(): Promise<void> {
    try {
      const { windowMs, items } = await api.topicActivity();
      this.host?.get<WorkerActivity>('workerActivity').show(items, windowMs);
    } catch {
      // The badges stay as they were; the next refresh tries again.
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
      if (this.saveState === 'saved' && !this.layoutUnsaved) return;
      this.saveState = 'saving';
      try {
        await api.saveDiagram(this.diagramId, await this.currentXml());
        if (this.saveState === 'saving') this.saveState = 'saved';
        this.layoutUnsaved = false;
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
    if (result.processKey) void this.followDeployed(result.processKey);
    else void this.refreshDifference();
    this.lint = result;
    // A refused deploy's banner follows the problems it counted: gone once they are fixed.
    if (this.error.startsWith('Deploy refused')) this.error = result.ok ? '' : refusedText(result.diagnostics.length);
    this.host?.get<LintMarkers>('lintMarkers').show([...result.diagnostics, ...result.warnings]);
  }

  /** Looks up what is deployed under the key (when it changes) and what the canvas changes against it. */
  private async followDeployed(key: string): Promise<void> {
    if (this.lookedUpKey !== key) {
      this.lookedUpKey = key;
      try {
        // Through the list: a key never deployed is an answer here, not a 404 in the console.
        const known = (await api.listDefinitions()).some((d) => d.key === key);
        this.deployedLatest = known ? await api.getDefinition(key) : null;
      } catch {
        this.lookedUpKey = undefined; // unknown for now: the next lint asks again
        return;
      }
    }
    await this.refreshDifference();
  }

  private async refreshDifference(): Promise<void> {
    const markers = this.host?.get<DiffMarkers>('diffMarkers');
    if (!markers || !this.deployedLatest) {
      this.difference = undefined;
      return;
    }
    this.difference = await markers.diffAgainst(this.deployedLatest.xml);
    if (this.comparing) markers.show(this.difference);
  }

  private toggleCompare(): void {
    this.comparing = !this.comparing;
    const markers = this.host?.get<DiffMarkers>('diffMarkers');
    if (this.comparing && this.difference) markers?.show(this.difference);
    else markers?.clear();
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
      const before = this.name;
      this.name = (await api.renameDiagram(this.diagramId, name)).name;
      this.processFollowsName(before, this.name);
    } catch (err) {
      this.error = (err as ApiError).message;
      input.value = this.name;
    }
  }

  /**
   * The process key and name follow the diagram's name while they still are what the old name
   * gave them (a new diagram's slug and name); once edited in the panel they stay.
   */
  private processFollowsName(before: string, after: string): void {
    const host = this.host;
    const root = host?.get<Canvas>('canvas').getRootElement() as DiagramElement | undefined;
    const process = root?.businessObject;
    if (!host || !root || process?.$type !== 'bpmn:Process') return;
    const changes: Record<string, string> = {};
    if (process.name === before) changes.name = after;
    if (process.id === processKeyFor(before)) changes.id = processKeyFor(after);
    if (Object.keys(changes).length > 0) host.get<Modeling>('modeling').updateProperties(root, changes);
  }

  private async deploy(): Promise<void> {
    this.deployed = undefined;
    this.error = '';
    await this.save();
    try {
      const xml = await this.currentXml();
      this.deployed = await api.deploy(xml);
      this.deployedLatest = { ...this.deployed, xml };
      this.showProblems({ ok: true, diagnostics: [], warnings: this.deployed.warnings });
    } catch (err) {
      const apiError = err as ApiError;
      if (apiError.type === 'CompileError' && Array.isArray(apiError.details)) {
        this.showProblems({ ok: false, diagnostics: apiError.details as Diagnostic[], warnings: [] });
        this.error = refusedText(apiError.details.length);
      } else this.error = `Deploy failed: ${apiError.message}`;
    }
  }

  private async exportFile(kind: 'xml' | 'svg'): Promise<void> {
    const base = this.name.replace(/[^\w.-]+/g, '-') || 'diagram';
    if (kind === 'xml') downloadText(`${base}.bpmn`, await this.currentXml(), 'application/xml');
    else downloadText(`${base}.svg`, (await this.host!.saveSVG()).svg, 'image/svg+xml');
  }

  /**
   * Ctrl+Z / Ctrl+Y (Cmd on a Mac) inside a properties field undo and redo on the diagram's
   * command stack, as the Undo button does: the field first commits what was typed (its own
   * step), so the browser's text undo never writes a change the Undo button would bring back.
   */
  private readonly onPanelKeys = (e: KeyboardEvent) => {
    if (!(e.ctrlKey || e.metaKey) || e.altKey) return;
    const key = e.key.toLowerCase();
    if (key !== 'z' && key !== 'y') return;
    e.preventDefault();
    e.stopPropagation();
    const field = document.activeElement instanceof HTMLElement ? document.activeElement : undefined;
    field?.blur();
    // After the panel has drawn the committed value: a field whose value goes there and back
    // within one drawing would keep showing what was typed.
    setTimeout(() => {
      this.command(key === 'y' || e.shiftKey ? 'redo' : 'undo');
      if (field?.isConnected) field.focus();
    });
  };

  /** Zoom by a step around the canvas's centre, or fit the whole diagram beside the palette. */
  private zoom(step: 'in' | 'out' | 'fit'): void {
    const canvas = this.host?.get<Canvas>('canvas');
    if (!canvas) return;
    if (step === 'fit') return fitViewport(canvas);
    const { outer } = canvas.viewbox();
    const centre = { x: outer.width / 2, y: outer.height / 2 };
    canvas.zoom(Math.min(4, Math.max(0.2, canvas.zoom() * (step === 'in' ? 1.25 : 0.8))), centre);
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

  /** Where the draft stands against what is deployed, and, while comparing, what changed. */
  private renderDeployedStatus() {
    const d = this.deployedLatest;
    if (d === undefined) return nothing;
    if (d === null) return html`<p class="deployed-status" role="status">Not deployed yet</p>`;
    const diff = this.difference;
    const changed = diff && diff.added.length + diff.changed.length + diff.moved.length + diff.removed.length > 0;
    const fingerprint = this.lint?.fingerprint;
    return html`<p class="deployed-status" role="status">
      Deployed as <a href="#/definitions/${encodeURIComponent(d.key)}"><strong>${d.key}</strong> v${d.version}</a>
      · ${changed ? html`<span class="draft-changed">draft changed since</span>` : 'the draft is the same'}
      ${
        this.comparing && diff
          ? html`<span class="compare-summary">
            · ${diff.added.length} added, ${diff.changed.length} changed, ${diff.moved.length} moved, ${diff.removed.length} removed${
              diff.removed.length ? html` (${diff.removed.join(', ')})` : nothing
            }
            · ${
              !fingerprint
                ? 'the steps cannot be compared until the diagram compiles'
                : fingerprint === d.fingerprint
                  ? 'same steps (fingerprint unchanged)'
                  : html`<strong>the steps change</strong> (fingerprint ${d.fingerprint.slice(0, 8)} → ${fingerprint.slice(0, 8)})`
            }</span>`
          : nothing
      }
    </p>`;
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
          <button @click=${() => this.zoom('in')} title="Zoom in" aria-label="Zoom in">+</button>
          <button @click=${() => this.zoom('out')} title="Zoom out" aria-label="Zoom out">−</button>
          <button @click=${() => this.zoom('fit')} title="Fit the diagram to the view">Fit</button>
          <button @click=${() => this.save()}>Save</button>
          <button @click=${() => this.exportFile('xml')}>Export XML</button>
          <button @click=${() => this.exportFile('svg')}>Export SVG</button>
          <button class="compare" aria-pressed=${this.comparing ? 'true' : 'false'} ?disabled=${!this.deployedLatest}
            title="Mark what changed against the deployed version" @click=${() => this.toggleCompare()}>Compare</button>
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
        ${this.renderDeployedStatus()}
        <div class="editor-body">
          <div class="canvas" tabindex="0" aria-label="BPMN canvas"></div>
          <aside class="side">
            <p class="dialect" title="The properties panel edits this engine's attributes">${this.dialect ? DIALECTS[this.dialect] : ''}</p>
            <div class="properties-panel" aria-label="Properties"></div>
            ${this.deployedLatest ? html`<baton-start-form .definitionKey=${this.deployedLatest.key}></baton-start-form>` : nothing}
          </aside>
        </div>
        <baton-problems-panel .problems=${problems} .checking=${this.linting} .ok=${this.lint?.ok ?? null}
          .explain=${this.host ? (p: Diagnostic) => this.host!.get<ProblemFixes>('problemFixes').explain(p) : undefined}
          @baton-select-element=${(e: CustomEvent<{ elementId: string }>) => this.selectElement(e.detail.elementId)}></baton-problems-panel>
      </div>
    `;
  }
}

customElements.define('baton-editor', BatonEditor);
