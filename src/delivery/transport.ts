import { isIP } from 'node:net'
import type { Writable } from 'node:stream'
import nodemailer from 'nodemailer'
import type { Config } from '../config'
import { MxResolver } from './mx'
import { enhancedCode } from './retry'

/** One message for one recipient. */
export interface SendJob {
  from: string
  to: string
  recipientDomain: string
  raw: Buffer
  /** The sending domain asks for TLS or nothing (domains.tls = enforced). */
  requireTls: boolean
  /** The source address to bind (the sending domain's dedicated IP); the host's default when unset. */
  localAddress?: string
  signal?: AbortSignal
}

/**
 * What became of one hand-over:
 * - delivered: a 2xx to the end of DATA (or captured);
 * - deferred: a 4xx, or a failure of the destination worth retrying;
 * - bounced: a 5xx (or no mail server for the domain at all);
 * - network: no server could be spoken to (connection refused, timeout, TLS, our
 *   DNS down, relay credentials refused): the circuit breaker's business;
 * - failed: the fault is ours (the message or envelope cannot be sent at all).
 */
export interface SendResult {
  kind: 'delivered' | 'deferred' | 'bounced' | 'network' | 'failed'
  code: number | null
  enhanced: string | null
  response: string
  /** The MX host or relay spoken to (host[ip]:port). */
  host: string | null
  /** For the breaker: which destination failed to connect (the relay, or the recipient's domain). */
  destination?: string
  /** Capture mode: the message was stored, not sent. */
  captured?: boolean
}

export interface Transport {
  readonly mode: Config['delivery']
  /** Distinct destinations failing to connect in a row that mean our own way out is down. */
  readonly breakerThreshold: number
  send(job: SendJob): Promise<SendResult>
  close(): Promise<void>
}

export interface TransportOptions {
  /** Connections per destination (MX host or relay). */
  perDestination?: number
  connectionTimeoutMs?: number
  greetingTimeoutMs?: number
  socketTimeoutMs?: number
  /** MX answers are reused this long. */
  mxCacheMs?: number
}

const CONNECT_CODES = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EDNS', 'ETLS', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'])

type SmtpError = Error & { code?: string; responseCode?: number; response?: string; command?: string }

/** Maps a nodemailer result or error to a SendResult. */
export function resultOf(err: SmtpError | null, info: { response?: string } | null, host: string, destination: string): SendResult {
  if (!err) {
    const response = info?.response ?? '250 OK'
    return { kind: 'delivered', code: Number(response.slice(0, 3)) || 250, enhanced: enhancedCode(response), response, host }
  }
  const code = typeof err.responseCode === 'number' ? err.responseCode : null
  const response = (err.response ?? err.message ?? String(err)).trim()
  const enhanced = enhancedCode(response)
  if (err.code === 'ETLS') {
    // No TLS where it is required (an enforced domain, or smtps/STARTTLS to the relay failing): never a bounce.
    const r = { code, enhanced, response: `ETLS: TLS could not be established: ${response}`, host }
    return destination === 'relay' ? { kind: 'network', ...r, destination } : { kind: 'deferred', ...r }
  }
  if (err.code === 'EAUTH') {
    // The relay refused our credentials: nobody's mail can go, so the breaker's business, never a bounce.
    return { kind: 'network', code, enhanced, response: `EAUTH: ${response}`, host, destination }
  }
  if (code !== null && code >= 500) return { kind: 'bounced', code, enhanced, response, host }
  if (code !== null && code >= 400) return { kind: 'deferred', code, enhanced, response, host }
  const errCode = err.code ?? ''
  if (CONNECT_CODES.has(errCode) || /ECONNREFUSED|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH|socket|closed/i.test(response)) {
    return { kind: 'network', code, enhanced, response: `${errCode ? errCode + ': ' : ''}${response}`, host, destination }
  }
  if (errCode === 'EENVELOPE' || (errCode === 'EMESSAGE' && code === null && /invalid|not allowed/i.test(response))) {
    return { kind: 'failed', code, enhanced, response: `${errCode}: ${response}`, host }
  }
  return { kind: 'deferred', code, enhanced, response: `${errCode ? errCode + ': ' : ''}${response}`, host }
}

type Mailer = ReturnType<typeof nodemailer.createTransport>

/**
 * The message's bytes as SMTPConnection#send reads them: anything with `pipe` is piped
 * into its dot-stuffing stream, once the envelope is accepted; `readableDidRead` tells
 * the pool whether a failed message may be requeued (no byte of it was sent).
 */
interface MessageSource {
  readableDidRead: boolean
  pipe(into: Writable): void
}

function bytesOf(raw: Buffer): MessageSource {
  const source: MessageSource = {
    readableDidRead: false,
    pipe(into) {
      source.readableDidRead = true
      into.end(raw)
    },
  }
  return source
}

/** What nodemailer's SMTP pool reads of a message (smtp-pool/index.js, pool-resource.js). */
interface PoolMessage {
  data: { signal?: AbortSignal }
  message: { getEnvelope(): { from: string; to: string[] }; messageId(): string; getHeader(name: string): string; createReadStream(): MessageSource }
}
type Pool = { send(mail: PoolMessage, callback: (err: Error | null, info: unknown) => void): void }

/**
 * One message through a nodemailer pool, handed to the pool directly: sendMail runs even
 * a raw message through MailComposer's stream pipeline, which cost 0.15-0.26 ms of CPU a
 * message against 0.06-0.09 ms this way, on the thread the database shares. The bytes go
 * in one write rather than through a Readable (Readable.from and pipe cost more than the
 * write). A fresh source per try keeps the pool's requeue of a message no byte of which
 * was sent.
 */
function sendVia(mailer: Mailer, job: SendJob, host: string, destination: string): Promise<SendResult> {
  const mail: PoolMessage = {
    data: { signal: job.signal },
    message: { getEnvelope: () => ({ from: job.from, to: [job.to] }), messageId: () => '', getHeader: () => '', createReadStream: () => bytesOf(job.raw) },
  }
  return new Promise((resolve) => {
    ;(mailer.transporter as unknown as Pool).send(mail, (err, info) => {
      resolve(resultOf(err as SmtpError | null, info as { response?: string } | null, host, destination))
    })
  })
}

/**
 * Pools keyed by destination, each with its own connection limit; idle connections
 * close by themselves (nodemailer's idleTimeout), and the least recently used pool is
 * closed when there are too many.
 */
class Pools {
  private pools = new Map<string, Mailer>()
  constructor(private readonly max = 500) {}

  get(key: string, make: () => Mailer): Mailer {
    let m = this.pools.get(key)
    if (m) {
      this.pools.delete(key)
      this.pools.set(key, m)
      return m
    }
    m = make()
    this.pools.set(key, m)
    if (this.pools.size > this.max) {
      const [oldKey, old] = this.pools.entries().next().value!
      this.pools.delete(oldKey)
      old.close()
    }
    return m
  }

  get size() {
    return this.pools.size
  }

  async close() {
    for (const m of this.pools.values()) m.close()
    this.pools.clear()
  }
}

/** Development: the message is stored on the attempt and counts as delivered. */
export class CaptureTransport implements Transport {
  readonly mode = 'capture' as const
  readonly breakerThreshold = Infinity
  async send(job: SendJob): Promise<SendResult> {
    return { kind: 'delivered', code: 250, enhanced: null, response: job.raw.toString('utf8'), host: null, captured: true }
  }
  async close() {}
}

/** Everything through one smarthost (smtp:// with STARTTLS when offered, or smtps://), pooled. */
export class RelayTransport implements Transport {
  readonly mode = 'relay' as const
  readonly breakerThreshold = 1
  /** One pool per source address: a dedicated IP's mail reaches the relay from that address. */
  private pools = new Pools()
  readonly host: string

  constructor(private readonly config: Config, private readonly opts: TransportOptions = {}) {
    if (!config.relayUrl) throw new Error('MAILROOM_RELAY_URL is not set')
    const u = new URL(config.relayUrl)
    this.host = `${u.hostname}:${u.port || (u.protocol === 'smtps:' ? 465 : 587)}`
  }

  send(job: SendJob) {
    const mailer = this.pools.get(job.localAddress ?? '', () =>
      nodemailer.createTransport({
        // The URL carries host, port, smtps, credentials and query options such as tls.rejectUnauthorized=false.
        url: this.config.relayUrl,
        pool: true,
        maxConnections: this.opts.perDestination ?? this.config.deliveryConcurrency,
        maxMessages: 1000,
        name: this.config.hostname,
        localAddress: job.localAddress,
        connectionTimeout: this.opts.connectionTimeoutMs ?? 15_000,
        greetingTimeout: this.opts.greetingTimeoutMs ?? 15_000,
        socketTimeout: this.opts.socketTimeoutMs ?? 60_000,
        maxRequeues: 1,
      } as never),
    )
    return sendVia(mailer, job, this.host, 'relay')
  }

  async close() {
    await this.pools.close()
  }
}

/**
 * Straight to the recipient's MX hosts, in preference order (the domain's own A
 * record when it has no MX), STARTTLS whenever offered (certificates are not
 * checked, as with every opportunistic MTA), one pool per MX host.
 */
export class MxTransport implements Transport {
  readonly mode = 'mx' as const
  readonly breakerThreshold = 5
  private pools = new Pools()
  readonly resolver: MxResolver

  constructor(private readonly config: Config, private readonly opts: TransportOptions = {}) {
    this.resolver = new MxResolver(config.dnsServers, opts.mxCacheMs ?? 30_000)
  }

  async send(job: SendJob): Promise<SendResult> {
    const domain = job.recipientDomain
    const route = await this.resolver.route(domain)
    if (route.kind === 'null') return { kind: 'bounced', code: 556, enhanced: '5.1.10', response: `556 5.1.10 ${domain} accepts no mail (null MX)`, host: null }
    if (route.kind === 'none') return { kind: 'bounced', code: 550, enhanced: '5.1.2', response: `550 5.1.2 ${domain} has no mail server (no MX, A or AAAA record)`, host: null }
    if (route.kind === 'error') {
      // Our resolver unreachable is our network; a SERVFAIL is the destination's DNS.
      return route.ours
        ? { kind: 'network', code: null, enhanced: null, response: `DNS lookup of ${domain} failed: ${route.message}`, host: null, destination: domain }
        : { kind: 'deferred', code: null, enhanced: null, response: `451 4.4.3 DNS lookup of ${domain} failed: ${route.message}`, host: null }
    }
    let last: SendResult | null = null
    for (const mx of route.hosts.slice(0, 5)) {
      const addresses = isIP(mx) ? [mx] : await this.resolver.addresses(mx)
      for (const ip of addresses.slice(0, 2)) {
        const hostLabel = `${mx}[${ip}]:${this.config.mxPort}`
        // A socket cannot bind an IPv6 source to reach an IPv4 host (or the reverse): such a host is reached from the default address.
        const local = job.localAddress && isIP(job.localAddress) === isIP(ip) ? job.localAddress : undefined
        const mailer = this.pools.get(`${mx}|${ip}|${job.requireTls ? 'tls' : 'opp'}|${local ?? ''}`, () =>
          nodemailer.createTransport({
            pool: true,
            host: ip,
            port: this.config.mxPort,
            secure: false,
            name: this.config.hostname,
            localAddress: local,
            requireTLS: job.requireTls,
            opportunisticTLS: !job.requireTls,
            tls: { servername: isIP(mx) ? undefined : mx, rejectUnauthorized: false },
            maxConnections: this.opts.perDestination ?? Math.min(5, this.config.deliveryConcurrency),
            maxMessages: 100,
            connectionTimeout: this.opts.connectionTimeoutMs ?? 15_000,
            greetingTimeout: this.opts.greetingTimeoutMs ?? 15_000,
            socketTimeout: this.opts.socketTimeoutMs ?? 60_000,
            maxRequeues: 1,
          } as never),
        )
        const r = await sendVia(mailer, job, hostLabel, domain)
        // A refused connection (or a 421 greeting) moves on to the next host; any other reply is the answer.
        if (r.kind !== 'network' && r.code !== 421) return r
        last = r
        if (job.signal?.aborted) return r
      }
    }
    return last ?? { kind: 'deferred', code: null, enhanced: null, response: `451 4.4.4 no address found for the MX hosts of ${domain}`, host: null }
  }

  async close() {
    await this.pools.close()
  }
}

export function createTransport(config: Config, opts: TransportOptions = {}): Transport {
  if (config.delivery === 'capture') return new CaptureTransport()
  if (config.delivery === 'relay') return new RelayTransport(config, opts)
  return new MxTransport(config, opts)
}
