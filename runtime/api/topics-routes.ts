// /api/topics: what the server knows of topics across workers. Every role may read it
// (runtime/security/roles.ts): the designer marks the topics no worker fetches.
import { Router } from 'express';
import type { Engine } from '../engine/context.ts';
import type { TopicActivity } from '../engine/fetch-activity.ts';
import { validateQuery } from '../shared/validate.ts';

export function topicsRouter(engine: Engine): Router {
  const router = Router();

  // Every node's flushed fetches and this node's newest ones (engine/fetch-activity.ts).
  router.get('/activity', async (req, res) => {
    const { topic } = validateQuery<{ topic?: string }>('topic-activity-query', req.query);
    const items = await engine.fetchActivity.read(topic);
    res.json({ windowMs: engine.fetchActivity.windowMs, items: items.map(topicActivityView) });
  });

  return router;
}

function topicActivityView(a: TopicActivity) {
  return {
    topic: a.topic,
    lastFetchedAt: a.lastFetchedAt.toISOString(),
    workers: a.workers.map((w) => ({ workerId: w.workerId, lastFetchedAt: w.lastFetchedAt.toISOString() })),
  };
}
