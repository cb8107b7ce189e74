// The app shell: header navigation and a hash router over the views.
import { html } from 'lit';
import { keyed } from 'lit/directives/keyed.js';
import { LightElement } from './light-element.ts';
import './baton-definition-view.ts';
import './baton-diagram-list.ts';
import './baton-editor.ts';
import './baton-incident-list.ts';
import './baton-instance-list.ts';
import './baton-instance-view.ts';
import './baton-task-list.ts';
import './baton-task-view.ts';
import './baton-token-dialog.ts';

interface Route {
  path: string[];
  params: URLSearchParams;
}

function readRoute(): Route {
  const raw = location.hash.replace(/^#\/?/, '');
  const [pathPart = '', queryPart = ''] = raw.split('?');
  return { path: pathPart.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(queryPart) };
}

export class BatonApp extends LightElement {
  static override properties = { route: { state: true } };
  declare route: Route;

  constructor() {
    super();
    this.route = readRoute();
  }

  private readonly onHashChange = () => {
    this.route = readRoute();
  };

  private readonly onNavigate = (e: Event) => {
    location.hash = (e as CustomEvent<{ hash: string }>).detail.hash;
  };

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('hashchange', this.onHashChange);
    this.addEventListener('baton-navigate', this.onNavigate);
  }

  override disconnectedCallback(): void {
    window.removeEventListener('hashchange', this.onHashChange);
    this.removeEventListener('baton-navigate', this.onNavigate);
    super.disconnectedCallback();
  }

  private renderView() {
    const [section, id] = this.route.path;
    const params = this.route.params;
    if (section === 'diagrams' && id) return html`<baton-editor .diagramId=${id}></baton-editor>`;
    if (section === 'instances' && id) return html`<baton-instance-view .instanceId=${id}></baton-instance-view>`;
    if (section === 'instances') {
      return html`<baton-instance-list .definitionKey=${params.get('definitionKey') ?? ''} .status=${params.get('status') ?? ''}></baton-instance-list>`;
    }
    if (section === 'incidents') return html`<baton-incident-list></baton-incident-list>`;
    if (section === 'tasks' && id) return html`<baton-task-view .taskId=${id}></baton-task-view>`;
    if (section === 'tasks') return html`<baton-task-list .tab=${params.get('tab') ?? ''}></baton-task-list>`;
    if (section === 'definitions' && id) {
      const version = Number(params.get('version')) || undefined;
      return html`<baton-definition-view .definitionKey=${id} .version=${version}></baton-definition-view>`;
    }
    return html`<baton-diagram-list></baton-diagram-list>`;
  }

  // keyed: a new route gets a new view element, so a view never shows the previous id's data.
  override render() {
    const section = this.route.path[0] ?? 'diagrams';
    return html`
      <header class="app-header">
        <a class="brand" href="#/">Baton</a>
        <nav aria-label="Main">
          <a href="#/diagrams" aria-current=${section === 'diagrams' || section === 'definitions' ? 'page' : 'false'}>Diagrams</a>
          <a href="#/instances" aria-current=${section === 'instances' ? 'page' : 'false'}>Instances</a>
          <a href="#/incidents" aria-current=${section === 'incidents' ? 'page' : 'false'}>Incidents</a>
          <a href="#/tasks" aria-current=${section === 'tasks' ? 'page' : 'false'}>Tasks</a>
        </nav>
        <baton-token-dialog></baton-token-dialog>
      </header>
      <main class="app-main">${keyed(location.hash, this.renderView())}</main>
    `;
  }
}

customElements.define('baton-app', BatonApp);
