import { Elysia, t } from 'elysia'
import { AppError } from '../errors/app-error'
import type { Platform } from '../http/platform'
import { ASSETS, SHELL } from './assets'
import { qrSvg } from './qr'

/**
 * The page's policy: everything from the binary itself, nothing from elsewhere.
 * Inline styles are allowed only because an email's own HTML, rendered in the
 * sandboxed frame (which inherits this policy), carries its styles inline; the
 * console never writes markup from data, so no script can ride on them.
 * Remote images in an email stay blocked: opening it fires no tracking pixel.
 */
export const CONSOLE_CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const PAGE_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
}

/** Not API operations: kept out of /openapi.json, which describes exactly the catalogue. */
const hidden = { auth: 'public' as const, detail: { hide: true } }

/**
 * The web console: one page and its scripts and styles, all embedded in the
 * binary. It holds no data and no logic of its own: every figure and every change
 * goes through the REST API with the session cookie, so the console can do
 * nothing the API cannot.
 */
export const consoleRoutes = (platform: Platform) =>
  new Elysia({ name: 'console' })
    .use(platform)
    .get(
      '/',
      ({ request }) => {
        // A browser opening the bare address wants the console; API clients get the usual not_found.
        if (!(request.headers.get('accept') ?? '').includes('text/html')) throw new AppError('not_found', { message: 'The requested endpoint does not exist.' })
        return new Response(null, { status: 302, headers: { location: '/console' } })
      },
      hidden,
    )
    .get('/console', () => new Response(SHELL, { headers: { ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8' } }), hidden)
    .get(
      '/console/assets/:file',
      ({ params }) => {
        const asset = ASSETS[params.file]
        if (!asset) throw new AppError('not_found', { message: `The console has no file \`${params.file}\`.` })
        return new Response(asset.body, { headers: { ...PAGE_HEADERS, 'content-type': asset.type } })
      },
      { ...hidden, params: t.Object({ file: t.String({ maxLength: 100 }) }) },
    )
    // The enrolment QR code, drawn here so the page needs no encoder of its own. The
    // otpauth URI comes in the body, never in a URL that logs and histories keep.
    .post('/console/qr', ({ body }) => new Response(qrSvg(body.text), { headers: { ...PAGE_HEADERS, 'content-type': 'image/svg+xml' } }), {
      ...hidden,
      body: t.Object({ text: t.String({ minLength: 1, maxLength: 1000 }) }),
    })
