// The small pages a recipient sees: plain HTML, no scripts, no external resources,
// nothing about the service's internals. Every dynamic value is escaped.
import { escapeHtml as esc } from '../lib/html'

/** The referrer policy comes with each page's headers: the OAuth consent page, which shares this shell, needs its own. */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${esc(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
button{font:inherit;padding:.5rem 1rem;border:1px solid #1a1a1a;border-radius:4px;background:#fff;cursor:pointer}
button:focus,input:focus{outline:2px solid #0b57d0;outline-offset:2px}fieldset{border:1px solid #ccc;border-radius:4px;padding:1rem}
label{display:block;margin:.4rem 0}.d{color:#555;font-size:.9rem;margin:0 0 .6rem 1.6rem}a{color:#0b57d0}</style></head>
<body><main>${body}</main></body></html>`
}

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-robots-tag': 'noindex, nofollow',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
}

export const html = (body: string, status = 200) => new Response(body, { status, headers: HEADERS })

/** The one answer to a bad, tampered or expired address: says nothing about why. */
export const notFoundPage = () => html(page('Link not valid', '<h1>This link is not valid</h1><p>The address may be incomplete or out of date. Please check the link in your email.</p>'), 404)

export const noListPage = () =>
  html(page('Nothing to unsubscribe from', '<h1>Nothing to unsubscribe from</h1><p>This message was not sent to a mailing list, so there is no subscription to end.</p>'), 404)

export interface UnsubscribeView {
  recipient: string
  /** The topic the mail was sent under; null for a broadcast without a topic (the whole list). */
  topicName: string | null
  token: string
  /** Whether the preference page has anything to show. */
  preferences: boolean
}

const what = (v: UnsubscribeView) => (v.topicName ? `“${esc(v.topicName)}”` : 'all mailing-list messages from this sender')

const preferencesLink = (v: UnsubscribeView) => (v.preferences ? `<p><a href="/unsubscribe/${esc(v.token)}/preferences">Manage all your email preferences</a></p>` : '')

/** GET: asks; changes nothing (link scanners fetch it too). */
export function confirmPage(v: UnsubscribeView): string {
  return page(
    'Unsubscribe',
    `<h1>Unsubscribe</h1><p>Stop sending ${what(v)} to <strong>${esc(v.recipient)}</strong>?</p>
<form method="post" action="/unsubscribe/${esc(v.token)}"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>
${preferencesLink(v)}`,
  )
}

/** POST: done (also on a repeat). */
export function unsubscribedPage(v: UnsubscribeView): string {
  return page('Unsubscribed', `<h1>You are unsubscribed</h1><p><strong>${esc(v.recipient)}</strong> will no longer receive ${what(v)}.</p>${preferencesLink(v)}`)
}

export interface PreferenceItem {
  id: string
  name: string
  description: string
  subscribed: boolean
}

export function preferencesPage(recipient: string, token: string, items: PreferenceItem[], saved: boolean): string {
  const list = items.length
    ? `<form method="post" action="/unsubscribe/${esc(token)}/preferences"><fieldset><legend>Send me</legend>
${items
  .map(
    (t) => `<input type="hidden" name="shown" value="${esc(t.id)}"><label><input type="checkbox" name="topic" value="${esc(t.id)}"${t.subscribed ? ' checked' : ''}> ${esc(t.name)}</label>${t.description ? `<p class="d">${esc(t.description)}</p>` : ''}`,
  )
  .join('\n')}
</fieldset><p><button type="submit">Save preferences</button></p></form>`
    : '<p>There are no subscription topics to choose from.</p>'
  return page(
    'Email preferences',
    `<h1>Email preferences</h1><p>For <strong>${esc(recipient)}</strong>.</p>${saved ? '<p role="status"><strong>Your preferences are saved.</strong></p>' : ''}${list}`,
  )
}
