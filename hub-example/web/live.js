// Live updates over server-sent events: one EventSource on /events for a
// project's agents, authenticated by the session cookie. A status change is
// handed to the page, which updates the agent's card, row or node in place;
// a `resync` (the Hub may have missed events) asks the page to refetch.

/**
 * Subscribes to the status changes of `projectId`'s agents; `onResync` is
 * called when changes may have been missed. Returns a stop function.
 */
export function watchProjectAgents(projectId, onStatus, onResync = () => {}) {
  const subject = `projects.${projectId}.agents.>`;
  const source = new EventSource(`/events?sub=${encodeURIComponent(subject)}`);
  source.addEventListener('agent.status', (event) => {
    try {
      onStatus(JSON.parse(event.data));
    } catch {
      // A malformed event is dropped; the next one still applies.
    }
  });
  source.addEventListener('resync', () => onResync());
  // The Hub ends a stream with an `end` event (shutdown, expired or revoked
  // credential): do not reconnect.
  source.addEventListener('end', () => source.close());
  return () => source.close();
}

/** Applies a status change to every element of the agent in `root`. */
export function applyStatus(root, change) {
  for (const node of root.querySelectorAll(`[data-agent-id="${CSS.escape(change.agentId)}"]`)) {
    const phase = node.querySelector('[data-field="phase"]');
    if (phase) {
      phase.textContent = change.phase;
      phase.className = `phase phase-${change.phase}`;
    }
    const activity = node.querySelector('[data-field="activity"]');
    if (activity) activity.textContent = change.activity;
    node.dataset.updatedAt = change.updatedAt;
  }
}
