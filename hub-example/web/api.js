// Calls to the Hub's API from the page: same-origin, authenticated by the
// session cookie, and marked with X-Scion-Client on every unsafe method so
// the Hub can tell them from a cross-site form.

/** An API answer that was not a success, with the Hub's message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const SAFE = new Set(['GET', 'HEAD']);

/**
 * Sends a request and returns the parsed JSON body; throws ApiError with the
 * status and the Hub's `error` message when it is not a success.
 */
export async function api(path, { method = 'GET', body, headers = {} } = {}) {
  const init = {
    method,
    credentials: 'same-origin',
    headers: { Accept: 'application/json', ...headers },
  };
  if (!SAFE.has(method)) init.headers['X-Scion-Client'] = 'web';
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'the Hub could not be reached');
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    throw new ApiError(response.status, (data && data.error) || response.statusText);
  }
  return data;
}

/** The path of a project's agent list with these query parameters. */
export function projectAgentsPath(projectId, params = {}) {
  const query = new URLSearchParams(params).toString();
  const path = `/api/v1/projects/${encodeURIComponent(projectId)}/agents`;
  return query ? `${path}?${query}` : path;
}
