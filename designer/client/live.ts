// How the designer follows changing server state. For now it polls the REST API every
// second; a later issue swaps this one module to Socket.IO progress frames, so the
// components never poll on their own.
import { api, ApiError } from './api-client.ts';
import type { HistoryEvent, InstanceDetail } from './types.ts';

export const POLL_INTERVAL_MS = 1000;

export interface InstanceSnapshot {
  detail: InstanceDetail;
  /** every history event so far, in seq order */
  history: HistoryEvent[];
}

/** Calls read() now and then every interval until the returned stop is called; errors go to onError. */
export function pollEvery<T>(read: () => Promise<T>, onValue: (v: T) => void, onError: (e: ApiError) => void, intervalMs = POLL_INTERVAL_MS): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    try {
      const value = await read();
      if (!stopped) onValue(value);
    } catch (err) {
      if (!stopped) onError(err instanceof ApiError ? err : new ApiError(0, 'Error', String(err)));
    }
    if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * Follows one instance: its detail and its history. The history is read whole on every tick:
 * seq is allocation order, not commit order (docs/ARCHITECTURE.md), so reading only after the
 * last seen seq could miss an event that commits late. Socket.IO frames replace this later.
 */
export function watchInstance(id: string, onSnapshot: (s: InstanceSnapshot) => void, onError: (e: ApiError) => void): () => void {
  const read = async (): Promise<InstanceSnapshot> => {
    const [detail, history] = await Promise.all([api.getInstance(id), api.getHistory(id, 0)]);
    return { detail, history };
  };
  return pollEvery(read, onSnapshot, onError);
}
