// Marks, on each service task with a topic, whether a worker asked for that topic recently
// (GET /api/topics/activity): the analyst sees at a glance which tasks would wait for a worker.
// Overlays only: nothing in the model changes.
import type { TopicActivity } from '../../client/types.ts';
import type { DiagramElement, ElementRegistry, Overlays } from '../diagram-services.ts';

function topicOf(element: DiagramElement): string | undefined {
  const bo = element.businessObject;
  if (bo.$type !== 'bpmn:ServiceTask') return undefined;
  const camunda = bo.get('camunda:topic');
  if (typeof camunda === 'string' && camunda.trim()) return camunda.trim();
  const values = (bo.extensionElements as { values?: { $type: string; type?: string }[] } | undefined)?.values ?? [];
  const type = values.find((v) => v.$type === 'zeebe:TaskDefinition')?.type?.trim();
  return type || undefined;
}

function ago(iso: string, now: number): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

export default class WorkerActivity {
  static $inject = ['overlays', 'elementRegistry', 'eventBus'];
  private activity: Map<string, TopicActivity> | undefined;
  private windowMs = 0;

  constructor(
    private readonly overlays: Overlays,
    private readonly elementRegistry: ElementRegistry,
    eventBus: { on(event: string, fn: () => void): void },
  ) {
    // A topic typed or a task added: its badge follows.
    eventBus.on('elements.changed', () => this.draw());
  }

  show(items: TopicActivity[], windowMs: number): void {
    this.activity = new Map(items.map((a) => [a.topic, a]));
    this.windowMs = windowMs;
    this.draw();
  }

  private draw(): void {
    if (!this.activity) return;
    this.overlays.remove({ type: 'baton-worker-activity' });
    const now = Date.now();
    for (const element of this.elementRegistry.getAll() as DiagramElement[]) {
      const topic = topicOf(element);
      if (!topic) continue;
      const seen = this.activity.get(topic);
      const badge = document.createElement('div');
      badge.className = `baton-worker-badge ${seen ? 'seen' : 'unseen'}`;
      badge.dataset.elementId = element.id;
      badge.dataset.topic = topic;
      badge.textContent = seen ? `● ${topic}` : `○ ${topic}`;
      badge.title = seen
        ? `Fetched ${ago(seen.lastFetchedAt, now)} by ${seen.workers.map((w) => w.workerId).join(', ')}`
        : `No worker fetched "${topic}" in the last ${Math.round(this.windowMs / 3_600_000)} h`;
      this.overlays.add(element.id, 'baton-worker-activity', { position: { bottom: 14, left: 0 }, html: badge });
    }
  }
}
