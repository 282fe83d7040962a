// The client's entry point: reads the shell's initial data once per full
// page load, shows the page the address names, and handles client-side
// navigation (links marked data-nav, the browser's back and forward), each
// of which ends the current load.

import { el, errorPage } from './dom.js';
import { ReadinessMarks } from './marks.js';
import { ProjectPage, StandaloneGraphPage } from './project.js';
import { sessionBar, signInForm } from './signin.js';

const initial = JSON.parse(document.getElementById('scion-initial-data').textContent);
const marks = new ReadinessMarks(initial.readinessMarks === true);
const app = document.getElementById('app');
let current = null;

function homePage() {
  const input = el('input', { id: 'project-id', placeholder: 'project id', 'aria-label': 'Project id', required: true });
  const form = el(
    'form',
    { class: 'open-project' },
    el('h1', {}, 'Projects'),
    el('label', { for: 'project-id' }, 'Open a project by its id'),
    input,
    el('button', { type: 'submit' }, 'Open'),
    el('p', {}, el('a', { href: '/graph', 'data-nav': true }, 'The graph of every agent you can see')),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    navigate(`/projects/${encodeURIComponent(input.value.trim())}`);
  });
  return form;
}

/** Shows the page of the current address. */
function show() {
  if (current) current.stop();
  current = null;
  if (!initial.signedIn) {
    app.replaceChildren(signInForm());
    return;
  }
  const path = location.pathname;
  const params = new URLSearchParams(location.search);
  const project = path.match(/^\/projects\/([^/]+)\/?$/);
  if (project) {
    current = new ProjectPage(app, {
      projectId: decodeURIComponent(project[1]),
      view: params.get('view'),
      marks,
    });
  } else if (path === '/graph') {
    current = new StandaloneGraphPage(app, {
      projectId: params.get('project'),
      marks,
      onFilter: (projectId) => navigate(projectId ? `/graph?project=${encodeURIComponent(projectId)}` : '/graph'),
    });
  } else if (path === '/') {
    app.replaceChildren(homePage());
    return;
  } else {
    app.replaceChildren(errorPage('Page not found', 'There is no page at this address.'));
    return;
  }
  current.start();
}

/** Client-side navigation: a new load at `url`. */
function navigate(url) {
  history.pushState(null, '', url);
  marks.endLoad();
  show();
}

document.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-nav]');
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  navigate(link.getAttribute('href'));
});

window.addEventListener('popstate', () => {
  marks.endLoad();
  show();
});

if (initial.signedIn) {
  document.getElementById('session').replaceChildren(...sessionBar(initial.user));
}
show();
