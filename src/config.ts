import { hostname as osHostname } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'

export interface Config {
  port: number
  dataDir: string
  databaseUrl: string
  databaseAuthToken?: string
  baseUrl: string
  bootstrapKey?: string
  /** Requests per minute per API key when the key sets no ceiling of its own. */
  rateLimitPerMinute: number
  /** Requests per minute per client address on public routes and failed authentication. */
  publicRateLimitPerMinute: number
  /** Take the client address from X-Forwarded-For (only behind a trusted proxy). */
  trustProxy: boolean
  /** The operator's account quotas in emails; unset means unlimited. A key budget may not exceed the monthly one. */
  dailyQuota?: number
  monthlyQuota?: number
  /** This host's name: EHLO greeting, Message-ID domain, default MX and SPF target. */
  hostname: string
  /** How mail leaves: direct to the recipient's MX, through a relay, or stored only (development). */
  delivery: 'mx' | 'relay' | 'capture'
  /** smtp://user:pass@host:port or smtps://… when `delivery` is `relay`. */
  relayUrl?: string
  /** Port spoken to on a recipient's MX (25; tests point it at a local sink). */
  mxPort: number
  /** DNS servers for MX lookups and domain checks, as host:port; empty means the system's. */
  dnsServers: string[]
  /** The SPF mechanism domains must authorise, e.g. `ip4:203.0.113.5` or `include:_spf.example.net`; default `a:<hostname>`. */
  spfMechanism: string
  /** Messages in flight at once across all destinations. */
  deliveryConcurrency: number
  /** Sending domains an account may add; unset means unlimited. */
  domainLimit?: number
  /** Extra link domains refused in content (`link_domain_listed`), beside the built-in list. */
  linkBlocklist: string[]
  /** Extra recipient addresses or domains refused (`recipient_blocklisted`), beside the built-in list. */
  recipientBlocklist: string[]
  /** The inbound SMTP listener: port (0 picks a free one) and address. */
  smtpPort: number
  smtpHost: string
  /** PEM files for STARTTLS; unset means a self-signed certificate generated at start. */
  smtpTlsCert?: string
  smtpTlsKey?: string
  /** Largest message accepted, in bytes (SIZE); larger ones answer 552. */
  smtpMaxSize: number
  /** Open connections allowed from one client address at once. */
  smtpMaxConnectionsPerAddress: number
  /** Messages one client address may hand over per minute. */
  smtpMessagesPerMinute: number
  /** Let webhook endpoints use http and loopback, private or link-local addresses (development and tests only). */
  allowPrivateWebhooks: boolean
  /** Webhook endpoints an account may have. */
  webhookEndpointLimit: number
  /** Webhook requests in flight at once to one endpoint. */
  webhookConcurrency: number
  /** Anyone may sign up and get an account of their own; otherwise sign-up after the first person is by invitation. */
  openSignup: boolean
  /** Hours a console session lasts after sign-in. */
  sessionHours: number
  /** Members (and pending invitations) an account may have; unset means unlimited. */
  seatLimit?: number
  /** Invitations an account may send per 24 hours. */
  invitesPerDay: number
  /** Agent controls (see README, "Agent controls and trust"). */
  controls: ControlSettings
}

export interface ControlSettings {
  /** Recipients a batch or broadcast started by a key may reach before a person must approve it; 0 turns approvals off. */
  approvalThreshold: number
  /** Hours a pending agent action waits for a decision before it expires. */
  approvalHours: number
  /** The loop guard: the same content to the same recipient this many times within the window trips it. */
  loopGuardRepeats: number
  loopGuardWindowMinutes: number
  /** The kill switch: a key is paused when, over its sends of the last window (at least `killSwitchMinSends`), a share passes its percentage. */
  killSwitchWindowMinutes: number
  killSwitchMinSends: number
  killSwitchBouncePercent: number
  killSwitchComplaintPercent: number
  killSwitchInvalidPercent: number
}

export class ConfigError extends Error {}

function int(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number) {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`)
  return n
}

function optionalInt(env: Record<string, string | undefined>, name: string) {
  return env[name] ? int(env, name, 0, 1, 1_000_000_000) : undefined
}

const list = (raw: string | undefined) => (raw ?? '').split(',').map((x) => x.trim().toLowerCase()).filter(Boolean)

function bool(env: Record<string, string | undefined>, name: string, fallback: boolean) {
  const raw = env[name]?.toLowerCase()
  if (raw === undefined || raw === '') return fallback
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true
  if (['0', 'false', 'no', 'off'].includes(raw)) return false
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`)
}

/** Reads configuration from the environment; a bad value throws a ConfigError naming the setting. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const port = int(env, 'PORT', 3000, 0, 65535)
  const dataDir = resolve(env.MAILROOM_DATA_DIR || './data')
  let databaseUrl = env.MAILROOM_DATABASE_URL || `file:${join(dataDir, 'mailroom.db')}`
  if (!/^(file:|libsql:\/\/|https?:\/\/|wss?:\/\/)/.test(databaseUrl)) {
    if (databaseUrl.includes('://')) throw new ConfigError(`MAILROOM_DATABASE_URL must be a file path or a libsql://, http:// or https:// URL, got "${databaseUrl}"`)
    databaseUrl = `file:${isAbsolute(databaseUrl) ? databaseUrl : resolve(databaseUrl)}`
  }
  const baseUrl = (env.MAILROOM_BASE_URL || `http://localhost:${port}`).replace(/\/+$/, '')
  try {
    const u = new URL(baseUrl)
    if (!['http:', 'https:'].includes(u.protocol)) throw new Error()
  } catch {
    throw new ConfigError(`MAILROOM_BASE_URL must be an http:// or https:// URL, got "${env.MAILROOM_BASE_URL}"`)
  }
  const bootstrapKey = env.MAILROOM_BOOTSTRAP_KEY || undefined
  if (bootstrapKey !== undefined && !/^[A-Za-z0-9_\-]{20,200}$/.test(bootstrapKey)) {
    throw new ConfigError('MAILROOM_BOOTSTRAP_KEY must be 20 to 200 letters, digits, "_" or "-"')
  }
  const hostname = (env.MAILROOM_HOSTNAME || osHostname()).toLowerCase()
  if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(hostname)) throw new ConfigError(`MAILROOM_HOSTNAME must be a host name, got "${hostname}"`)
  const delivery = (env.MAILROOM_DELIVERY || 'mx') as Config['delivery']
  if (!['mx', 'relay', 'capture'].includes(delivery)) throw new ConfigError(`MAILROOM_DELIVERY must be mx, relay or capture, got "${env.MAILROOM_DELIVERY}"`)
  const relayUrl = env.MAILROOM_RELAY_URL || undefined
  if (relayUrl !== undefined && !/^smtps?:\/\/[^/]+/.test(relayUrl)) throw new ConfigError('MAILROOM_RELAY_URL must be smtp://[user:pass@]host[:port] or smtps://…')
  if (delivery === 'relay' && !relayUrl) throw new ConfigError('MAILROOM_RELAY_URL must be set when MAILROOM_DELIVERY is relay')
  const dnsServers = (env.MAILROOM_DNS_SERVERS || '').split(',').map((x) => x.trim()).filter(Boolean)
  for (const d of dnsServers) {
    if (!/^(\[[0-9a-f:]+\]|[0-9.]+)(:\d{1,5})?$/i.test(d)) throw new ConfigError(`MAILROOM_DNS_SERVERS must be a comma-separated list of ip[:port], got "${d}"`)
  }
  if (Boolean(env.MAILROOM_SMTP_TLS_CERT) !== Boolean(env.MAILROOM_SMTP_TLS_KEY)) throw new ConfigError('MAILROOM_SMTP_TLS_CERT and MAILROOM_SMTP_TLS_KEY must be set together')
  return {
    port,
    dataDir,
    databaseUrl,
    databaseAuthToken: env.MAILROOM_DATABASE_AUTH_TOKEN || undefined,
    baseUrl,
    bootstrapKey,
    rateLimitPerMinute: int(env, 'MAILROOM_RATE_LIMIT', 600, 1, 1_000_000),
    publicRateLimitPerMinute: int(env, 'MAILROOM_PUBLIC_RATE_LIMIT', 300, 1, 1_000_000),
    trustProxy: bool(env, 'MAILROOM_TRUST_PROXY', false),
    dailyQuota: optionalInt(env, 'MAILROOM_DAILY_QUOTA'),
    monthlyQuota: optionalInt(env, 'MAILROOM_MONTHLY_QUOTA'),
    hostname,
    delivery,
    relayUrl,
    mxPort: int(env, 'MAILROOM_MX_PORT', 25, 1, 65535),
    dnsServers,
    spfMechanism: env.MAILROOM_SPF_MECHANISM || `a:${hostname}`,
    deliveryConcurrency: int(env, 'MAILROOM_DELIVERY_CONCURRENCY', 20, 1, 1000),
    domainLimit: optionalInt(env, 'MAILROOM_DOMAIN_LIMIT'),
    linkBlocklist: list(env.MAILROOM_LINK_BLOCKLIST),
    recipientBlocklist: list(env.MAILROOM_RECIPIENT_BLOCKLIST),
    smtpPort: int(env, 'MAILROOM_SMTP_PORT', 2525, 0, 65535),
    smtpHost: env.MAILROOM_SMTP_HOST || '0.0.0.0',
    smtpTlsCert: env.MAILROOM_SMTP_TLS_CERT || undefined,
    smtpTlsKey: env.MAILROOM_SMTP_TLS_KEY || undefined,
    smtpMaxSize: int(env, 'MAILROOM_SMTP_MAX_SIZE', 40 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    smtpMaxConnectionsPerAddress: int(env, 'MAILROOM_SMTP_MAX_CONNECTIONS', 10, 1, 100_000),
    smtpMessagesPerMinute: int(env, 'MAILROOM_SMTP_RATE_LIMIT', 60, 1, 1_000_000),
    allowPrivateWebhooks: bool(env, 'MAILROOM_ALLOW_PRIVATE_WEBHOOKS', false),
    webhookEndpointLimit: int(env, 'MAILROOM_WEBHOOK_ENDPOINT_LIMIT', 10, 1, 10_000),
    webhookConcurrency: int(env, 'MAILROOM_WEBHOOK_CONCURRENCY', 10, 1, 1000),
    openSignup: bool(env, 'MAILROOM_OPEN_SIGNUP', false),
    sessionHours: int(env, 'MAILROOM_SESSION_HOURS', 12, 1, 24 * 90),
    seatLimit: optionalInt(env, 'MAILROOM_SEAT_LIMIT'),
    invitesPerDay: int(env, 'MAILROOM_INVITE_LIMIT', 50, 1, 100_000),
    controls: loadControls(env),
  }
}

function loadControls(env: Record<string, string | undefined>): ControlSettings {
  return {
    approvalThreshold: int(env, 'MAILROOM_APPROVAL_THRESHOLD', 1000, 0, 1_000_000_000),
    approvalHours: int(env, 'MAILROOM_APPROVAL_HOURS', 24, 1, 24 * 30),
    loopGuardRepeats: int(env, 'MAILROOM_LOOP_GUARD_REPEATS', 3, 1, 1000),
    loopGuardWindowMinutes: int(env, 'MAILROOM_LOOP_GUARD_WINDOW_MINUTES', 60, 1, 7 * 24 * 60),
    killSwitchWindowMinutes: int(env, 'MAILROOM_KILL_SWITCH_WINDOW_MINUTES', 60, 1, 7 * 24 * 60),
    killSwitchMinSends: int(env, 'MAILROOM_KILL_SWITCH_MIN_SENDS', 20, 1, 1_000_000),
    killSwitchBouncePercent: int(env, 'MAILROOM_KILL_SWITCH_BOUNCE_PERCENT', 10, 1, 100),
    killSwitchComplaintPercent: int(env, 'MAILROOM_KILL_SWITCH_COMPLAINT_PERCENT', 2, 1, 100),
    killSwitchInvalidPercent: int(env, 'MAILROOM_KILL_SWITCH_INVALID_PERCENT', 5, 1, 100),
  }
}
