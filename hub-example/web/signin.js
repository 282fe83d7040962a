// Signing in and out. The bearer token is posted once, in the Authorization
// header of one request, and exchanged for an HttpOnly session cookie: the
// page never keeps it, and it never appears in a URL.

import { api } from './api.js';
import { el } from './dom.js';

/** The sign-in form; a full reload follows a successful sign-in. */
export function signInForm() {
  const token = el('input', {
    id: 'token',
    type: 'password',
    autocomplete: 'off',
    required: true,
    placeholder: 'scb1.…',
    'aria-label': 'Session token',
  });
  const message = el('p', { class: 'form-error', role: 'alert', id: 'sign-in-error' });
  const form = el(
    'form',
    { class: 'sign-in', id: 'sign-in' },
    el('h1', {}, 'Sign in'),
    el('p', {}, 'Paste a session token of your Hub account. It is sent once and exchanged for a browser session.'),
    el('label', { for: 'token' }, 'Session token'),
    token,
    el('button', { type: 'submit' }, 'Sign in'),
    message,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    message.textContent = '';
    try {
      await api('/api/v1/auth/session', {
        method: 'POST',
        headers: { Authorization: `Bearer ${token.value.trim()}` },
      });
      token.value = '';
      location.reload();
    } catch (error) {
      message.textContent = `Sign-in refused: ${error.message}.`;
    }
  });
  return form;
}

/** The signed-in user's name and the sign-out button. */
export function sessionBar(user) {
  return [
    el('span', { class: 'user', id: 'signed-in-as' }, user.displayName),
    el(
      'button',
      {
        type: 'button',
        id: 'sign-out',
        onclick: async () => {
          try {
            await api('/api/v1/auth/session', { method: 'DELETE' });
          } finally {
            location.assign('/');
          }
        },
      },
      'Sign out',
    ),
  ];
}
