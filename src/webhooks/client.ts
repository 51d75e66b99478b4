import type { WebhookGuard } from './guard'

export interface ClientOptions {
  /** How long one attempt may take, answer body included. */
  timeoutMs?: number
  /** How much of a response body is kept for the delivery log. */
  excerptBytes?: number
  /** Extra certificate authorities to trust (PEM), beside the system's: a private CA in development, a test CA in tests. */
  ca?: string
}

/** What one POST came to. */
export interface AttemptResult {
  ok: boolean
  /** The HTTP status; null when none came (refused, unreachable, timed out). */
  status: number | null
  /** The start of the response body, or why there was no response. */
  response: string
  durationMs: number
  /** A 429's or 503's Retry-After, in milliseconds. */
  retryAfterMs?: number
}

/**
 * POSTs webhook bodies. Each request connects to the one address the guard
 * checked (the URL's host stays in the Host header and the TLS server name, so
 * certificates verify as usual), follows no redirects (a redirect could point
 * inside the network), and keeps at most `excerptBytes` of the answer.
 */
export class WebhookClient {
  private readonly timeoutMs: number
  private readonly excerptBytes: number

  constructor(private readonly guard: WebhookGuard, private readonly opts: ClientOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? 15_000
    this.excerptBytes = opts.excerptBytes ?? 2048
  }

  async post(rawUrl: string, headers: Record<string, string>, body: string, now: () => number): Promise<AttemptResult> {
    const t0 = performance.now()
    const took = () => Math.round(performance.now() - t0)
    const target = await this.guard.target(rawUrl)
    if (!target.ok) return { ok: false, status: null, response: target.reason, durationMs: took() }
    const { url, address } = target
    const pinned = new URL(url)
    pinned.hostname = address.includes(':') ? `[${address}]` : address
    pinned.hash = ''
    try {
      const res = await fetch(pinned, {
        method: 'POST',
        body,
        headers: { ...headers, host: url.host, 'content-type': 'application/json', 'user-agent': 'Mailroom-Webhooks/1' },
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
        tls: { serverName: url.hostname.replace(/^\[|\]$/g, ''), ...(this.opts.ca ? { ca: this.opts.ca } : {}) },
      })
      const response = await this.excerpt(res)
      const ok = res.status >= 200 && res.status < 300
      const retryAfterMs = res.status === 429 || res.status === 503 ? retryAfter(res.headers.get('retry-after'), now()) : undefined
      return { ok, status: res.status, response, durationMs: took(), ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }
    } catch (e) {
      const err = e as Error
      const reason = err.name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : err.message
      return { ok: false, status: null, response: `The request failed: ${reason}`, durationMs: took() }
    }
  }

  /** The first `excerptBytes` of the body, as text; the rest is not read. */
  private async excerpt(res: Response): Promise<string> {
    if (!res.body) return ''
    const reader = res.body.getReader()
    const chunks: Uint8Array[] = []
    let size = 0
    try {
      while (size < this.excerptBytes) {
        const { done, value } = await reader.read()
        if (done) return decode(chunks, this.excerptBytes)
        chunks.push(value)
        size += value.length
      }
      await reader.cancel().catch(() => undefined)
    } catch (e) {
      // A body cut off (or timed out) after the status: the status is the answer.
      return `${decode(chunks, this.excerptBytes)}[body not read: ${(e as Error).message}]`
    }
    return decode(chunks, this.excerptBytes)
  }
}

function decode(chunks: Uint8Array[], max: number) {
  return Buffer.concat(chunks).subarray(0, max).toString('utf8')
}

/** Retry-After as seconds or an HTTP date, in milliseconds from now; nothing when unreadable. */
export function retryAfter(value: string | null, now: number): number | undefined {
  if (!value) return undefined
  const v = value.trim()
  if (/^\d+$/.test(v)) return Number(v) * 1000
  const at = Date.parse(v)
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined
}
