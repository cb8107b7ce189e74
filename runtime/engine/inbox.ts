// Messages that arrived before their catch event started waiting.
import type { Plan } from '../compiler/plan.ts';
import { deliverPayload } from './advance.ts';
import { type Effects, type NewSubscription, type Variables } from '../model/effects.ts';
import type { PoolClient } from '../store/db.ts';
import type { LockedInstance } from '../store/instances.ts';
import { lockMessageKey, takeBufferedMessage } from '../store/waits.ts';

/**
 * New message subscriptions of this transition first look in the inbox: a
 * message that arrived before its catch is consumed now, exactly once.
 */
export async function consumeBufferedMessages(
  tx: PoolClient,
  instance: LockedInstance,
  plan: Plan,
  fx: Effects,
  variables: Variables,
): Promise<void> {
  // By subscription, not by step: a repeating boundary waits again once it fired, and takes the next buffered message too.
  const checked = new Set<NewSubscription>();
  for (;;) {
    const sub = fx.subscriptions.find((s) => s.kind === 'message' && !checked.has(s) && !fx.endedWaits.includes(s.stepId));
    if (!sub) return;
    checked.add(sub);
    const correlationKey = sub.correlationKey ?? instance.business_key;
    await lockMessageKey(tx, { name: sub.name, correlationKey, instanceId: instance.id, byKey: true });
    const message = await takeBufferedMessage(tx, {
      name: sub.name,
      correlationKey,
      instanceId: instance.id,
      stepId: sub.stepId,
    });
    if (!message) continue;
    deliverPayload(plan, sub.stepId, instance.state, variables, message.payload, fx, { messageId: message.message_id });
  }
}
