// Base of the designer's components: they render into the light DOM, because bpmn-js and
// its stylesheets need a canvas that global CSS reaches (a shadow root would hide it).
import { LitElement } from 'lit';

export class LightElement extends LitElement {
  protected override createRenderRoot(): HTMLElement {
    return this;
  }

  /** Sends a `baton-*` event up to the app shell. */
  protected emit<T>(name: `baton-${string}`, detail?: T): void {
    this.dispatchEvent(new CustomEvent(name, { detail, bubbles: true, composed: true }));
  }

  protected navigate(hash: string): void {
    this.emit('baton-navigate', { hash });
  }
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/**
 * An id shortened to its last 8 hex digits, which differ between any two ids: instance
 * ids are uuid v7, whose first 12 digits are the start time, so the first 8 are the same
 * for every instance started within about a minute. The whole id goes in a title.
 */
export function shortId(id: string): string {
  return `…${id.slice(-8)}`;
}

/** Triggers a browser download of text content. */
export function downloadText(filename: string, content: string, type: string): void {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
