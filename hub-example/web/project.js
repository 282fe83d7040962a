// The project page, /projects/{id}: the project's agents in a grid of cards,
// a list of rows (both paged by the Hub, Next page fetching the following
// page with the page size chosen in the pager) or a graph of every agent and
// its creator. Status changes arrive live and update in place.

import { api, projectAgentsPath } from './api.js';
import { el, projectErrorPage } from './dom.js';
import { renderGraph, updateGraphNode } from './graph.js';
import { applyStatus, watchProjectAgents } from './live.js';
import { MARKS } from './marks.js';

export const VIEWS = ['grid', 'list', 'graph'];
export const PAGE_SIZES = [10, 25, 50, 100];
export const DEFAULT_PAGE_SIZE = 25;

function agentCard(agent) {
  return el(
    'article',
    { class: 'agent-card', 'data-agent-id': agent.id, 'data-updated-at': agent.updatedAt },
    el('h3', {}, agent.name),
    el(
      'p',
      { class: 'status' },
      el('span', { class: `phase phase-${agent.phase}`, 'data-field': 'phase' }, agent.phase),
      ' · ',
      el('span', { class: 'activity', 'data-field': 'activity' }, agent.activity),
    ),
    el('p', { class: 'creator' }, 'Created by ', agent.createdBy?.displayName ?? 'a former user'),
  );
}

function agentRow(agent) {
  return el(
    'tr',
    { class: 'agent-row', 'data-agent-id': agent.id, 'data-updated-at': agent.updatedAt },
    el('td', { class: 'name' }, agent.name),
    el('td', {}, el('span', { class: `phase phase-${agent.phase}`, 'data-field': 'phase' }, agent.phase)),
    el('td', { 'data-field': 'activity' }, agent.activity),
    el('td', {}, agent.createdBy?.displayName ?? ''),
  );
}

export class ProjectPage {
  constructor(root, { projectId, view, marks }) {
    this.root = root;
    this.projectId = projectId;
    this.view = VIEWS.includes(view) ? view : 'grid';
    this.marks = marks;
    this.pageSize = DEFAULT_PAGE_SIZE;
    this.page = null; // { number, agents, nextCursor }
    this.cursors = [];
    this.allAgents = null;
    this.delegations = [];
    this.stopLive = null;
    this.stopped = false;
  }

  async start() {
    this.root.replaceChildren(el('p', { class: 'loading' }, 'Loading agents…'));
    try {
      if (this.view === 'graph') {
        await this.loadAll();
      } else {
        await this.loadPage(null, 1);
      }
    } catch (error) {
      if (this.stopped) return;
      this.root.replaceChildren(projectErrorPage(error));
      return;
    }
    if (this.stopped) return;
    this.marks.mark(MARKS.agentsData, this.view);
    this.renderFrame();
    this.renderView();
    this.stopLive = watchProjectAgents(
      this.projectId,
      (change) => this.onStatus(change),
      () => this.refetch(),
    );
  }

  /** Loads what the page shows again (changes may have been missed). */
  async refetch() {
    if (this.stopped) return;
    if (this.view !== 'graph') {
      await this.goTo(this.page?.cursor ?? null, this.page?.number ?? 1);
      return;
    }
    try {
      await this.loadAll();
    } catch (error) {
      if (!this.stopped) this.root.replaceChildren(projectErrorPage(error));
      return;
    }
    if (!this.stopped && this.view === 'graph') this.renderView();
  }

  stop() {
    this.stopped = true;
    if (this.stopLive) this.stopLive();
  }

  async loadPage(cursor, number) {
    const params = { limit: this.pageSize, sort: 'name' };
    if (cursor) params.cursor = cursor;
    const data = await api(projectAgentsPath(this.projectId, params));
    this.page = { number, agents: data.agents, nextCursor: data.nextCursor ?? null, cursor };
  }

  async loadAll() {
    const [data, delegations] = await Promise.all([
      api(projectAgentsPath(this.projectId)),
      api(`/api/v1/projects/${encodeURIComponent(this.projectId)}/delegations`),
    ]);
    this.allAgents = data.agents;
    this.delegations = delegations.delegations;
  }

  renderFrame() {
    const tabs = el(
      'div',
      { class: 'view-tabs', role: 'tablist' },
      VIEWS.map((view) =>
        el(
          'button',
          {
            type: 'button',
            role: 'tab',
            'data-view': view,
            'aria-selected': view === this.view ? 'true' : 'false',
            onclick: () => this.switchView(view),
          },
          view[0].toUpperCase() + view.slice(1),
        ),
      ),
    );
    this.body = el('div', { class: 'view-body', id: 'view-body' });
    this.root.replaceChildren(
      el(
        'section',
        { class: 'project-page', 'data-project-id': this.projectId },
        el(
          'header',
          { class: 'page-header' },
          el('h1', {}, 'Agents'),
          el('a', { href: `/graph?project=${encodeURIComponent(this.projectId)}`, 'data-nav': true }, 'Open the standalone graph'),
        ),
        tabs,
        this.body,
      ),
    );
  }

  async switchView(view) {
    if (view === this.view) return;
    this.view = view;
    const url = new URL(location.href);
    url.searchParams.set('view', view);
    history.replaceState(history.state, '', url);
    for (const tab of this.root.querySelectorAll('[data-view]')) {
      tab.setAttribute('aria-selected', tab.dataset.view === view ? 'true' : 'false');
    }
    try {
      if (view === 'graph' && !this.allAgents) await this.loadAll();
      if (view !== 'graph' && !this.page) await this.loadPage(null, 1);
    } catch (error) {
      this.root.replaceChildren(projectErrorPage(error));
      return;
    }
    if (this.stopped || view !== this.view) return;
    this.renderView();
  }

  renderView() {
    if (this.view === 'graph') {
      this.body.replaceChildren();
      const holder = el('div', { class: 'graph-holder' });
      this.body.append(holder);
      renderGraph(holder, this.allAgents, this.delegations);
      this.marks.markNextFrame(MARKS.graph, 'graph');
      return;
    }
    const agents = this.page.agents;
    let content;
    if (agents.length === 0) {
      content = el('p', { class: 'empty' }, 'This project has no agents yet.');
    } else if (this.view === 'grid') {
      content = el('div', { class: 'agent-grid' }, agents.map(agentCard));
    } else {
      content = el(
        'table',
        { class: 'agent-list' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Phase'), el('th', {}, 'Activity'), el('th', {}, 'Created by'))),
        el('tbody', {}, agents.map(agentRow)),
      );
    }
    this.body.replaceChildren(content, this.pager());
    this.marks.markNextFrame(this.view === 'grid' ? MARKS.rowsGrid : MARKS.rowsList, this.view);
  }

  pager() {
    const select = el(
      'select',
      {
        id: 'page-size',
        onchange: (event) => this.changePageSize(Number(event.target.value)),
      },
      PAGE_SIZES.map((size) => el('option', { value: size, selected: size === this.pageSize }, size)),
    );
    return el(
      'nav',
      {
        class: 'pager',
        'aria-label': 'Pages',
        'data-page-size': this.pageSize,
        'data-page': this.page.number,
        'data-page-rows': this.page.agents.length,
      },
      el('button', { type: 'button', id: 'previous-page', disabled: this.cursors.length === 0, onclick: () => this.previousPage() }, 'Previous page'),
      el('span', { class: 'page-label' }, `Page ${this.page.number}`),
      el('button', { type: 'button', id: 'next-page', disabled: !this.page.nextCursor, onclick: () => this.nextPage() }, 'Next page'),
      el('label', {}, 'Per page ', select),
    );
  }

  async goTo(cursor, number) {
    try {
      await this.loadPage(cursor, number);
    } catch (error) {
      this.root.replaceChildren(projectErrorPage(error));
      return;
    }
    if (!this.stopped && this.view !== 'graph') this.renderView();
  }

  nextPage() {
    if (!this.page.nextCursor) return;
    this.cursors.push(this.page.cursor);
    return this.goTo(this.page.nextCursor, this.page.number + 1);
  }

  previousPage() {
    if (this.cursors.length === 0) return;
    const cursor = this.cursors.pop();
    return this.goTo(cursor, this.page.number - 1);
  }

  changePageSize(size) {
    this.pageSize = size;
    this.cursors = [];
    return this.goTo(null, 1);
  }

  onStatus(change) {
    for (const list of [this.page?.agents, this.allAgents]) {
      const agent = list?.find((a) => a.id === change.agentId);
      if (agent) Object.assign(agent, { phase: change.phase, activity: change.activity, updatedAt: change.updatedAt });
    }
    applyStatus(this.root, change);
    updateGraphNode(this.root, change.agentId, change.phase);
  }
}

/**
 * The standalone graph, /graph?project=ID: every agent the caller may list,
 * or one project's, as a graph. Changing the project filter ends the load.
 */
export class StandaloneGraphPage {
  constructor(root, { projectId, marks, onFilter }) {
    this.root = root;
    this.projectId = projectId || '';
    this.marks = marks;
    this.onFilter = onFilter;
    this.projects = new Set(projectId ? [projectId] : []);
    this.stopped = false;
    this.stopLive = null;
  }

  async start() {
    this.root.replaceChildren(el('p', { class: 'loading' }, 'Loading agents…'));
    let agents;
    let delegations = [];
    try {
      if (this.projectId) {
        const id = encodeURIComponent(this.projectId);
        const [list, lent] = await Promise.all([
          api(`/api/v1/agents?projectId=${id}`),
          api(`/api/v1/projects/${id}/delegations`),
        ]);
        agents = list.agents;
        delegations = lent.delegations;
      } else {
        agents = (await api('/api/v1/agents')).agents;
      }
    } catch (error) {
      if (!this.stopped) this.root.replaceChildren(projectErrorPage(error));
      return;
    }
    if (this.stopped) return;
    this.marks.mark(MARKS.agentsData, 'graph');
    for (const agent of agents) this.projects.add(agent.projectId);
    const filter = el(
      'select',
      { id: 'project-filter', onchange: (event) => this.onFilter(event.target.value) },
      el('option', { value: '', selected: !this.projectId }, 'All projects'),
      [...this.projects].sort().map((id) => el('option', { value: id, selected: id === this.projectId }, id)),
    );
    const holder = el('div', { class: 'graph-holder standalone' });
    this.root.replaceChildren(
      el(
        'section',
        { class: 'graph-page' },
        el('header', { class: 'page-header' }, el('h1', {}, 'Agent graph'), el('label', {}, 'Project ', filter)),
        holder,
      ),
    );
    renderGraph(holder, agents, delegations);
    this.marks.markNextFrame(MARKS.graph, 'graph');
    if (this.projectId) {
      this.stopLive = watchProjectAgents(
        this.projectId,
        (change) => updateGraphNode(this.root, change.agentId, change.phase),
        () => this.restart(),
      );
    }
  }

  stop() {
    this.stopped = true;
    if (this.stopLive) this.stopLive();
  }

  /** Loads the graph again (changes may have been missed), with a new stream. */
  restart() {
    if (this.stopped) return;
    if (this.stopLive) this.stopLive();
    this.stopLive = null;
    this.start();
  }
}
