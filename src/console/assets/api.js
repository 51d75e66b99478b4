// Every call the console makes goes through here: the REST API, with the session
// cookie (same origin, so the CSRF check sees the console's own Origin).

/** A refusal from the API, carrying the catalogue's code, message, fix and docs link. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `The server answered ${status}.`)
    this.status = status
    this.code = body?.code || `http_${status}`
    this.fix = body?.fix || ''
    this.docsUrl = body?.docs_url || ''
    this.body = body
  }
}

export function query(params = {}) {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v))
  const s = q.toString()
  return s ? `?${s}` : ''
}

/** JSON in, JSON (or text for raw sources) out; a non-2xx answer throws an ApiError. */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  let res
  try {
    res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) })
  } catch {
    throw new ApiError(0, { code: 'network_error', message: 'The server could not be reached.', fix: 'Check that Mailroom is running, then try again.' })
  }
  const type = res.headers.get('content-type') || ''
  const data = type.includes('json') ? await res.json().catch(() => null) : await res.text()
  if (!res.ok) throw new ApiError(res.status, data && typeof data === 'object' ? data : { message: String(data || '') })
  return data
}

export const get = (path, params) => api('GET', path + query(params))
export const post = (path, body) => api('POST', path, body)
export const patch = (path, body) => api('PATCH', path, body)
export const del = (path) => api('DELETE', path)
