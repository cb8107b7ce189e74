// Edits what the runtime reads from the selected element. Every change goes through the
// batonProperties service (modeling commands), so Undo works on it.
import { html, nothing } from 'lit';
import { live } from 'lit/directives/live.js';
import type { DiagramElement, DiagramHost, EventBus } from '../modeler/diagram-services.ts';
import type BatonProperties from '../modeler/properties/baton-properties.ts';
import type EventProperties from '../modeler/properties/event-properties.ts';
import type { TimerKind } from '../modeler/properties/event-properties.ts';
import { LightElement } from './light-element.ts';

export class BatonPropertiesPanel extends LightElement {
  static override properties = {
    host: { attribute: false },
    element: { state: true },
    revision: { state: true },
  };
  declare host: DiagramHost | undefined;
  declare element: DiagramElement | undefined;
  declare revision: number;
  private bound: DiagramHost | undefined;

  constructor() {
    super();
    this.host = undefined;
    this.element = undefined;
    this.revision = 0;
  }

  private readonly onSelection = (e: { newSelection: DiagramElement[] }) => {
    this.element = e.newSelection.length === 1 ? e.newSelection[0] : undefined;
  };

  private readonly onElementsChanged = () => {
    this.revision++;
  };

  override willUpdate(): void {
    if (this.host === this.bound) return;
    this.bound = this.host;
    this.element = undefined;
    const bus = this.host?.get<EventBus>('eventBus');
    bus?.on('selection.changed', this.onSelection as never);
    bus?.on('elements.changed', this.onElementsChanged);
  }

  private get props(): BatonProperties {
    return this.host!.get<BatonProperties>('batonProperties');
  }

  private get events(): EventProperties {
    return this.host!.get<EventProperties>('batonEventProperties');
  }

  private field(label: string, value: string, apply: (v: string) => void, hint = '', type = 'text') {
    const id = `prop-${label.toLowerCase().replace(/\W+/g, '-')}`;
    return html`<label for=${id}>${label}</label>
      <input id=${id} name=${id} type=${type} .value=${live(value)}
        @change=${(e: Event) => apply((e.target as HTMLInputElement).value)} />
      ${hint ? html`<small>${hint}</small>` : nothing}`;
  }

  private renderTask(el: DiagramElement) {
    const task = this.props.readTask(el);
    if (!task) return nothing;
    return html`<fieldset><legend>External task</legend>
      ${this.field('Topic', task.topic, (v) => this.props.setTopic(el, v), 'Workers fetch tasks by topic (camunda:topic)')}
      ${this.field('Retries', task.retries, (v) => this.props.setRetries(el, v), 'Retries after the first failure; empty = 3 (baton:retries)', 'number')}
      ${this.field('Priority', task.priority, (v) => this.props.setPriority(el, v), 'Higher is fetched first; empty = 0 (camunda:taskPriority)', 'number')}
    </fieldset>`;
  }

  private renderFlow(el: DiagramElement) {
    const flow = this.props.readFlow(el);
    if (!flow) return nothing;
    if (!flow.choosing)
      return html`<p class="hint">Conditions apply only to flows leaving an exclusive or inclusive gateway.</p>`;
    return html`<fieldset><legend>Sequence flow</legend>
      ${this.field('Condition', flow.condition, (v) => this.props.setCondition(el, v), 'FEEL "= total > 100" or JUEL "${total > 100}"')}
      <label class="check"><input type="checkbox" name="prop-default" .checked=${live(flow.isDefault)}
        @change=${(e: Event) => this.props.setDefaultFlow(el, (e.target as HTMLInputElement).checked)} /> Default flow</label>
    </fieldset>`;
  }

  private renderTimer(el: DiagramElement, timerKind: TimerKind, expression: string) {
    const hints: Record<TimerKind, string> = {
      duration: 'ISO-8601 duration, e.g. PT5M, P1D',
      date: 'ISO-8601 date-time, e.g. 2030-01-01T09:00:00Z',
      cycle: 'ISO-8601 repetition, e.g. R3/PT10M',
    };
    return html`<fieldset><legend>Timer</legend>
      <label for="prop-timer-kind">Fires after</label>
      <select id="prop-timer-kind" name="prop-timer-kind" .value=${live(timerKind)}
        @change=${(e: Event) => this.events.setTimer(el, (e.target as HTMLSelectElement).value as TimerKind, expression)}>
        <option value="duration">a duration</option><option value="date">a date</option><option value="cycle">a cycle</option>
      </select>
      ${this.field('Timer', expression, (v) => this.events.setTimer(el, timerKind, v), hints[timerKind])}
    </fieldset>`;
  }

  private renderEvent(el: DiagramElement) {
    const event = this.events.readEvent(el);
    switch (event?.type) {
      case 'timer':
        return this.renderTimer(el, event.timerKind, event.expression);
      case 'message':
        return html`<fieldset><legend>Message</legend>
          ${this.field('Message name', event.name, (v) => this.events.setReference(el, 'message', v), 'Messages are correlated by this name')}
          ${event.catches ? this.field('Correlation key', event.correlationKey, (v) => this.events.setCorrelationKey(el, v), 'FEEL, e.g. = orderId; empty = the business key (baton:correlationKey)') : nothing}
        </fieldset>`;
      case 'signal':
        return html`<fieldset><legend>Signal</legend>${this.field('Signal name', event.name, (v) => this.events.setReference(el, 'signal', v))}</fieldset>`;
      case 'error':
        return html`<fieldset><legend>Error</legend>
          ${this.field('Error code', event.errorCode, (v) => this.events.setReference(el, 'error', v), 'Matches the code a worker reports with bpmn-error; empty catches any')}
        </fieldset>`;
      default:
        return nothing;
    }
  }

  override render() {
    const el = this.element?.labelTarget ?? this.element;
    if (!this.host || !el) {
      return html`<section class="properties" aria-label="Properties"><h2>Properties</h2>
        <p class="empty">Select an element to edit its properties.</p></section>`;
    }
    const bo = el.businessObject;
    return html`<section class="properties" aria-label="Properties" data-revision=${this.revision}>
      <h2>Properties</h2>
      <p class="element-id"><span>${bo.$type.replace('bpmn:', '')}</span> <code>${bo.id}</code></p>
      ${this.field('Name', String(bo.name ?? ''), (v) => this.props.setName(el, v))}
      ${this.renderTask(el)}
      ${this.renderFlow(el)}
      ${this.renderEvent(el)}
    </section>`;
  }
}

customElements.define('baton-properties-panel', BatonPropertiesPanel);
