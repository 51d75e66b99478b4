/** The console session's cookie. Its value is the session token; only a hash of it is stored. */
export const SESSION_COOKIE = 'mailroom_session'

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i

/** Browsers drop a Secure cookie over plain http, so only plain http on a loopback host goes without it. */
function secure(baseUrl: string) {
  const u = new URL(baseUrl)
  return !(u.protocol === 'http:' && LOOPBACK.test(u.hostname))
}

/** HttpOnly so page scripts never read it; SameSite=Lax so other sites' forms and fetches do not carry it. */
export function sessionCookie(baseUrl: string, token: string, maxAgeSeconds: number) {
  return [`${SESSION_COOKIE}=${token}`, 'Path=/', `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax', ...(secure(baseUrl) ? ['Secure'] : [])].join('; ')
}

export const clearedSessionCookie = (baseUrl: string) => sessionCookie(baseUrl, '', 0)

export function sessionTokenOf(request: Request): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined
  }
  return undefined
}

/**
 * Whether a request carrying the session cookie comes from the console's own
 * origin. Browsers name the origin of every cross-site POST, PATCH and DELETE
 * (`Origin`, and `Sec-Fetch-Site` in current ones), so a request naming neither
 * is no browser's cross-site request: a script or a CLI holding its own cookie.
 */
export function fromOwnOrigin(request: Request, baseUrl: string) {
  const origin = request.headers.get('origin')
  if (origin !== null) return origin === new URL(baseUrl).origin
  const site = request.headers.get('sec-fetch-site')
  return site === null || site === 'same-origin' || site === 'none'
}
