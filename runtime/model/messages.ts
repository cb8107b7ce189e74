// A message as the engine takes it, and what became of it: shared by the routes, the
// catch events (engine/waits.ts) and the message start events (engine/event-starts.ts).
import type { Variables } from './effects.ts';

export interface PublishMessageRequest {
  name: string;
  correlationKey?: string;
  businessKey?: string;
  instanceId?: string;
  messageId?: string;
  variables?: Variables;
  /** how long an unmatched message waits in the inbox; 0: refuse it instead */
  ttlMs?: number;
}

export type PublishMessageResult =
  | { status: 'matched'; instanceId: string; messageId: string }
  /** no instance waited, and a message start event started this one */
  | { status: 'started'; instanceId: string; messageId: string }
  | { status: 'buffered'; messageId: string }
  | { status: 'duplicate'; messageId: string; instanceId?: string };
