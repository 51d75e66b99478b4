import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import type { Platform } from '../http/platform'
import { stateOf } from '../http/state'
import { confirmPage, html, noListPage, notFoundPage, preferencesPage, unsubscribedPage, type UnsubscribeView } from './pages'
import * as svc from './service'

/**
 * Recipient-facing addresses: the click redirect, the open pixel, the unsubscribe
 * confirmation and one-click POST, and the preference page. Public, and hidden from
 * /openapi.json: they are not API operations. They answer on any Host, so the same
 * paths serve this server's base URL and every domain's tracking host (a CNAME to
 * MAILROOM_HOSTNAME). A bad token gets a plain page, never an error envelope.
 */
/** A fresh object per route: Elysia writes the macro's hooks into it, so sharing one would tie every app to the first app's dependencies. */
const hidden = () => ({ auth: 'public' as const, detail: { hide: true } })

/** A transparent 1×1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64')
const NO_CACHE = { 'cache-control': 'no-store, no-cache, must-revalidate, max-age=0', pragma: 'no-cache', expires: '0' }

const visitOf = (request: Request): svc.Visit => ({ userAgent: request.headers.get('user-agent'), ipAddress: stateOf(request)?.address ?? null })

/** The Location header needs ASCII; a URL with other characters goes out in its percent-encoded form (the same address). */
const location = (url: string) => (/^[\x21-\x7e]*$/.test(url) ? url : new URL(url).href)

const redirect = (url: string) => new Response(null, { status: 302, headers: { location: location(url), 'referrer-policy': 'no-referrer', ...NO_CACHE } })
const gif = () => new Response(PIXEL, { headers: { 'content-type': 'image/gif', 'content-length': String(PIXEL.length), ...NO_CACHE } })

/** Recording must never stand between a person and their link: a failure is logged and the redirect still happens. */
async function safely<T>(deps: Deps, what: string, fn: () => Promise<T>, fallback: T): Promise<T> {
  try {
    return await fn()
  } catch (e) {
    deps.log.error(`tracking: ${what} not recorded`, { error: e instanceof Error ? e.message : String(e) })
    return fallback
  }
}

const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : [])

async function subscriptionPage(deps: Deps, token: string, render: (sub: svc.Subscription, view: UnsubscribeView) => Promise<Response> | Response) {
  const sub = await svc.readSubscription(deps, token)
  if (sub === null) return notFoundPage()
  if (sub === 'no_list') return noListPage()
  const prefs = await svc.preferences(deps, sub)
  return render(sub, { recipient: sub.recipient, topicName: sub.topic?.name ?? null, token, preferences: prefs.length > 0 })
}

export const trackingRoutes = (platform: Platform) =>
  new Elysia({ name: 'tracking' })
    .use(platform)
    // Link scanners and preview fetchers probe with HEAD (answered by these GET routes): answer, record nothing.
    .get('/t/c/:token', async ({ deps, params, request }) => {
      const visit = visitOf(request)
      const record = request.method === 'GET'
      const target = await safely(deps, 'click', () => svc.click(deps, params.token, visit, record), undefined)
      // On a failed record the token is still read, so the person still gets where they were going.
      const url = target === undefined ? await svc.click(deps, params.token, visit, false) : target
      return url ? redirect(url) : notFoundPage()
    }, hidden())
    .get('/t/o/:token', async ({ deps, params, request }) => {
      const ok = await safely(deps, 'open', () => svc.open(deps, params.token, visitOf(request), request.method === 'GET'), true)
      return ok ? gif() : notFoundPage()
    }, hidden())
    // GET only asks: a scanner following the link unsubscribes nobody.
    .get('/unsubscribe/:token', ({ deps, params }) => subscriptionPage(deps, params.token, (_, view) => html(confirmPage(view))), hidden())
    .post('/unsubscribe/:token', ({ deps, params, request }) =>
      subscriptionPage(deps, params.token, async (sub, view) => {
        await svc.unsubscribe(deps, sub, visitOf(request))
        return html(unsubscribedPage(view))
      }), hidden())
    .get('/unsubscribe/:token/preferences', ({ deps, params }) =>
      subscriptionPage(deps, params.token, async (sub) => html(preferencesPage(sub.recipient, params.token, await svc.preferences(deps, sub), false))), hidden())
    .post('/unsubscribe/:token/preferences', ({ deps, params, body, request }) =>
      subscriptionPage(deps, params.token, async (sub) => {
        const form = (body ?? {}) as Record<string, unknown>
        await svc.savePreferences(deps, sub, list(form.shown), list(form.topic), visitOf(request))
        return html(preferencesPage(sub.recipient, params.token, await svc.preferences(deps, sub), true))
      }), hidden())
