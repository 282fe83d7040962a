// A small element builder, so views are written as data rather than as HTML
// strings: text is always set as text, never parsed.

/** Creates `tag` with attributes (`class`, `data-*`, `on*` handlers) and children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      node.addEventListener(name.slice(2), value);
    } else {
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** The page shown for an error: what happened and the way back. */
export function errorPage(title, detail) {
  return el(
    'section',
    { class: 'error-page', role: 'alert' },
    el('h1', {}, title),
    el('p', {}, detail),
    el('p', {}, el('a', { href: '/', 'data-nav': true }, 'Back to the start page')),
  );
}

/** The error page for a failed API answer about a project. */
export function projectErrorPage(error) {
  switch (error.status) {
    case 400:
      return errorPage('Not a project address', 'The address does not name a project: a project id is a UUID.');
    case 401:
      return errorPage('Signed out', 'Your session has ended. Sign in again to see this project.');
    case 403:
      return errorPage('No access to this project', 'You are signed in, but you have no role in this project.');
    case 404:
      return errorPage('Project not found', 'No project has this id. It may have been deleted, or the address is mistyped.');
    default:
      return errorPage('The project could not be loaded', `The Hub answered: ${error.message}.`);
  }
}
