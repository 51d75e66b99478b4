// The consent page a signed-in person sees when a tool client asks for access:
// plain HTML, no scripts, every dynamic value escaped.
import { escapeHtml as esc } from '../lib/html'
import { page } from '../tracking/pages'
import type { AuthorizeQuery } from './schema'
import type { consentView } from './service'

type View = Awaited<ReturnType<typeof consentView>>

const SCOPE_TEXT = {
  sending_access: 'send email and read what it needs for sending',
  full_access: 'send email and manage contacts, topics, segments, broadcasts, templates, webhooks and domains',
}

export function consentPage(v: View, q: AuthorizeQuery) {
  const hidden = Object.entries({ ...q, redirect_uri: v.redirectUri })
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `<input type="hidden" name="${esc(name)}" value="${esc(String(value))}">`)
    .join('')
  const target = new URL(v.redirectUri)
  const body = `<h1>Give ${esc(v.client.name)} access?</h1>
<p><b>${esc(v.client.name)}</b> asks to act for the account <b>${esc(v.accountName)}</b>: it could ${esc(SCOPE_TEXT[v.permission])}.</p>
<p>You are signed in as ${esc(v.person.email)}. After your answer you go back to <code>${esc(target.protocol === 'http:' || target.protocol === 'https:' ? target.host : target.protocol)}</code>.</p>
<form method="post" action="/oauth/authorize">${hidden}<input type="hidden" name="csrf_token" value="${esc(v.csrf)}">
<fieldset><legend>Limits</legend><label>Emails it may send per month (empty: only the account’s limits)
<input name="budget_per_period" inputmode="numeric" pattern="[0-9]*" size="9"></label>
<p class="d">Its access is an API key of its own: its budget, rate ceiling and loop guard can be changed later, and it can be revoked at any time.</p></fieldset>
<p><button name="decision" value="approve">Allow</button> <button name="decision" value="deny">Deny</button></p></form>`
  return page(`Give ${v.client.name} access?`, body)
}

/** Like the recipient pages, but the form may be answered with a redirect to the client (CSP form-action covers redirects). */
export function consentHeaders(redirectUri: string) {
  const u = new URL(redirectUri)
  const target = u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : u.protocol
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-robots-tag': 'noindex, nofollow',
    // Not no-referrer: a browser then sends `Origin: null` with the form, and the session's CSRF check refuses it.
    'referrer-policy': 'same-origin',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${target}; frame-ancestors 'none'`,
    'x-frame-options': 'DENY',
  }
}
