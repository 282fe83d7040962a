// The agent graph in SVG: each creator above the agents it created, a link
// from creator to agent, and a dashed arc for each delegation (from the
// user who lends actions to the user or agent who may use them), laid out
// deterministically and fitted to the viewport through the SVG's viewBox. Used by the project page's graph view
// and by the standalone graph page.

const SVG = 'http://www.w3.org/2000/svg';
const AGENT_GAP = 34;
const COLUMN_GAP = 190;
const CREATOR_Y = 30;
const FIRST_AGENT_Y = 110;

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * Groups agents by creator, creators in name order, agents in name order;
 * users named only by a delegation get a column of their own.
 */
export function layout(agents, delegations = []) {
  const byCreator = new Map();
  const user = (id, name) => {
    if (!byCreator.has(id)) byCreator.set(id, { id, name: name || id, agents: [] });
    return byCreator.get(id);
  };
  for (const agent of agents) {
    const creator = agent.createdBy || { id: 'unknown' };
    user(creator.id, creator.displayName).agents.push(agent);
  }
  for (const d of delegations) {
    user(d.delegator.id, d.delegator.name);
    if (d.delegate.kind === 'user') user(d.delegate.id, d.delegate.name);
  }
  const creators = [...byCreator.values()].sort((a, b) => a.name.localeCompare(b.name));
  const nodes = [];
  const links = [];
  creators.forEach((creator, column) => {
    const x = column * COLUMN_GAP;
    nodes.push({ kind: 'creator', id: creator.id, label: creator.name, x, y: CREATOR_Y });
    creator.agents
      .sort((a, b) => a.name.localeCompare(b.name))
      .forEach((agent, row) => {
        const y = FIRST_AGENT_Y + row * AGENT_GAP;
        nodes.push({ kind: 'agent', id: agent.id, label: agent.name, phase: agent.phase, x, y });
        links.push({ kind: 'creator', from: { x, y: CREATOR_Y }, to: { x, y }, agentId: agent.id });
      });
  });
  const position = new Map(nodes.map((n) => [`${n.kind === 'agent' ? 'agent' : 'user'}:${n.id}`, n]));
  for (const d of delegations) {
    const from = position.get(`user:${d.delegator.id}`);
    const to = position.get(`${d.delegate.kind}:${d.delegate.id}`);
    if (from && to) links.push({ kind: 'delegation', from, to });
  }
  return { nodes, links };
}

/** The path of a link: creator links drop to their agent, delegations arc above. */
function linkPath(link) {
  const { from, to } = link;
  if (link.kind === 'delegation') {
    const lift = 40 + Math.abs(to.x - from.x) / 8;
    const top = Math.min(from.y, to.y) - 14 - lift;
    return `M${from.x},${from.y - 14} C${from.x},${top} ${to.x},${top} ${to.x},${to.y - 14}`;
  }
  return `M${from.x},${from.y + 14} C${from.x - 60},${(from.y + to.y) / 2} ${to.x - 60},${to.y} ${to.x - 8},${to.y}`;
}

/**
 * Renders `agents` into `container` as an SVG graph, fitted to the viewport,
 * or its empty state. Returns the element shown.
 */
export function renderGraph(container, agents, delegations = []) {
  container.replaceChildren();
  if (agents.length === 0) {
    const empty = document.createElement('p');
    empty.className = 'empty graph-empty';
    empty.textContent = 'No agents to draw.';
    container.append(empty);
    return empty;
  }
  const { nodes, links } = layout(agents, delegations);
  const root = svg('svg', {
    class: 'agent-graph',
    role: 'img',
    'aria-label': `Graph of ${agents.length} agents, their creators and ${delegations.length} delegations`,
    preserveAspectRatio: 'xMidYMid meet',
  });
  const edges = svg('g', { class: 'links' });
  for (const link of links) {
    edges.append(
      svg('path', { class: `link link-${link.kind}`, d: linkPath(link) }),
    );
  }
  root.append(edges);
  const group = svg('g', { class: 'nodes' });
  for (const node of nodes) {
    const attrs = { class: `node node-${node.kind}`, transform: `translate(${node.x},${node.y})` };
    if (node.kind === 'agent') {
      attrs['data-agent-id'] = node.id;
      attrs.class += ` phase-${node.phase}`;
    }
    const g = svg('g', attrs);
    if (node.kind === 'creator') {
      g.append(svg('rect', { x: -70, y: -14, width: 140, height: 28, rx: 6 }));
      g.append(svg('text', { 'text-anchor': 'middle', dy: 5 }, node.label));
    } else {
      g.append(svg('circle', { r: 8, 'data-field': 'phase-dot' }));
      g.append(svg('text', { x: 14, dy: 4 }, node.label));
    }
    group.append(g);
  }
  root.append(group);
  container.append(root);
  fit(root, nodes, links.some((l) => l.kind === 'delegation'));
  return root;
}

/** Sets the viewBox to the nodes' bounds, so the whole graph fits the viewport. */
function fit(root, nodes, arcs) {
  const xs = nodes.map((n) => n.x);
  const ys = nodes.map((n) => n.y);
  const pad = 40;
  const minX = Math.min(...xs) - 80;
  const maxX = Math.max(...xs) + 170;
  const minY = Math.min(...ys) - pad - (arcs ? 70 + (Math.max(...xs) - Math.min(...xs)) / 8 : 0);
  const maxY = Math.max(...ys) + pad;
  root.setAttribute('viewBox', `${minX} ${minY} ${maxX - minX} ${maxY - minY}`);
  root.setAttribute('width', '100%');
  root.setAttribute('height', '100%');
}

/** Updates an agent's node in place after a status change. */
export function updateGraphNode(container, agentId, phase) {
  for (const node of container.querySelectorAll(`g.node-agent[data-agent-id="${CSS.escape(agentId)}"]`)) {
    node.setAttribute('class', `node node-agent phase-${phase}`);
  }
}
