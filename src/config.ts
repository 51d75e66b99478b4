import ipaddr from 'ipaddr.js'
import { isIP } from 'node:net'
import { hostname as osHostname } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'

export interface Config {
  port: number
  dataDir: string
  databaseUrl: string
  databaseAuthToken?: string
  /** How long one exchange with a libSQL server may take before the request answers `service_unavailable`. */
  databaseTimeoutMs: number
  baseUrl: string
  bootstrapKey?: string
  /** Requests per minute per API key when the key sets no ceiling of its own. */
  rateLimitPerMinute: number
  /** Requests per minute per client address on public routes and failed authentication. */
  publicRateLimitPerMinute: number
  /** Rate windows one process tracks at once (per API table and per inbound listener); when all are still owed, new callers' writes are refused (`rate_limiter_unavailable`). */
  rateLimiterEntries: number
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
  /** Dedicated IPs and blocklists (see README, "Dedicated IPs and deliverability"). */
  deliverability: DeliverabilitySettings
  /** Trust standing and the onboarding sender (see README, "Agent controls and trust"). */
  trust: TrustSettings
  /** The operator's support desk: new support requests and replies are mailed here, from `supportFrom`; unset keeps them for the console. */
  supportEmail?: string
  supportFrom?: string
  /** The payment provider (Stripe's API shape); unset means billing is off and only the quotas above apply. */
  billing?: BillingSettings
}

export interface BillingSettings {
  secretKey: string
  webhookSecret: string
  /** The provider's API root (https://api.stripe.com; tests point it at a local fake). */
  apiUrl: string
  /** The provider's price id for each `plan_term` on sale (e.g. `pro_yearly`); a term without a price is not on sale. */
  prices: Record<string, string>
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

/** A percentage that may have decimals (complaint rates are fractions of a percent). */
function percent(env: Record<string, string | undefined>, name: string, fallback: number) {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!/^\d+(\.\d+)?$/.test(raw) || n <= 0 || n > 100) throw new ConfigError(`${name} must be a percentage above 0 and at most 100, got "${raw}"`)
  return n
}

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
    databaseTimeoutMs: int(env, 'MAILROOM_DATABASE_TIMEOUT_MS', 15_000, 100, 600_000),
    baseUrl,
    bootstrapKey,
    rateLimitPerMinute: int(env, 'MAILROOM_RATE_LIMIT', 600, 1, 1_000_000),
    publicRateLimitPerMinute: int(env, 'MAILROOM_PUBLIC_RATE_LIMIT', 300, 1, 1_000_000),
    rateLimiterEntries: int(env, 'MAILROOM_RATE_LIMITER_ENTRIES', 100_000, 1, 100_000_000),
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
    deliverability: loadDeliverability(env),
    trust: loadTrust(env),
    ...loadSupportDesk(env),
    billing: loadBilling(env),
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

export interface DeliverabilitySettings {
  /** DNS blocklists of addresses (DNSBL zones), asked `4.3.2.1.<zone>`. */
  dnsblZones: string[]
  /** DNS blocklists of domains (DBL zones), asked `<domain>.<zone>`. */
  dblZones: string[]
  /** The host's default outbound addresses, checked beside the dedicated IPs; empty means its public interface addresses. */
  outboundIps: string[]
  /** Assignments the operator pinned, domain name → source address: PATCH cannot change them. */
  pins: Map<string, string>
}

function loadDeliverability(env: Record<string, string | undefined>): DeliverabilitySettings {
  const zones = (name: string, fallback: string) => list(env[name] ?? fallback).map((z) => z.replace(/^\.+|\.+$/g, ''))
  const outboundIps = list(env.MAILROOM_OUTBOUND_IPS).map((ip) => {
    if (!isIP(ip)) throw new ConfigError(`MAILROOM_OUTBOUND_IPS must be a comma-separated list of IP addresses, got "${ip}"`)
    return ipaddr.process(ip).toString()
  })
  const pins = new Map<string, string>()
  for (const pair of list(env.MAILROOM_DEDICATED_IP_PINS)) {
    const [domain, ip] = pair.split('=').map((x) => x.trim().replace(/\.$/, ''))
    if (!domain || !ip || !isIP(ip)) throw new ConfigError(`MAILROOM_DEDICATED_IP_PINS must be domain=ip pairs separated by commas, got "${pair}"`)
    pins.set(domain, ipaddr.process(ip).toString())
  }
  return {
    dnsblZones: zones('MAILROOM_DNSBL_ZONES', 'zen.spamhaus.org,bl.spamcop.net,b.barracudacentral.org'),
    dblZones: zones('MAILROOM_DBL_ZONES', 'dbl.spamhaus.org'),
    outboundIps,
    pins,
  }
}

export type TrustLevelSetting = 'sandbox' | 'new' | 'established' | 'trusted'

export interface TrustSettings {
  /** The level an account made by open sign-up starts at; the first account and accounts without a standing row are `trusted`. */
  startLevel: TrustLevelSetting
  /** Emails a day (UTC) at each level below `trusted`. */
  sandboxDailyCap: number
  newDailyCap: number
  establishedDailyCap: number
  /** Promotion to the next level: days at the level, and (above sandbox) delivered real sends at it. */
  promoteDays: number
  promoteSends: number
  /** Pauses: over the real sends of the last window (at least `minSends`), a bounce or complaint share at or above its percentage. */
  windowHours: number
  minSends: number
  bouncePercent: number
  complaintPercent: number
  /** A batch with more recipients than this is a bulk send (held for young domains, refused under review). */
  bulkSize: number
  /** Bulk sends from a domain verified fewer hours ago than this are held (`young_domain_held`). */
  youngDomainHours: number
  /** The operator's onboarding address (`Name <a@b>` or `a@b`); unset means no onboarding sender. */
  onboardingFrom?: string
  onboardingDailyCap: number
}

const TRUST_LEVELS: TrustLevelSetting[] = ['sandbox', 'new', 'established', 'trusted']

function loadTrust(env: Record<string, string | undefined>): TrustSettings {
  const startLevel = (env.MAILROOM_TRUST_START_LEVEL || 'sandbox') as TrustLevelSetting
  if (!TRUST_LEVELS.includes(startLevel)) throw new ConfigError(`MAILROOM_TRUST_START_LEVEL must be one of ${TRUST_LEVELS.join(', ')}, got "${startLevel}"`)
  const onboardingFrom = env.MAILROOM_ONBOARDING_FROM?.trim() || undefined
  if (onboardingFrom !== undefined && !/^([^<>]*<)?[^\s<>@]+@[^\s<>@]+\.[^\s<>@]+>?$/.test(onboardingFrom)) {
    throw new ConfigError(`MAILROOM_ONBOARDING_FROM must be an address (a@b.example or Name <a@b.example>), got "${onboardingFrom}"`)
  }
  return {
    startLevel,
    sandboxDailyCap: int(env, 'MAILROOM_TRUST_SANDBOX_DAILY_CAP', 100, 1, 1_000_000_000),
    newDailyCap: int(env, 'MAILROOM_TRUST_NEW_DAILY_CAP', 1000, 1, 1_000_000_000),
    establishedDailyCap: int(env, 'MAILROOM_TRUST_ESTABLISHED_DAILY_CAP', 10_000, 1, 1_000_000_000),
    promoteDays: int(env, 'MAILROOM_TRUST_PROMOTE_DAYS', 7, 0, 365),
    promoteSends: int(env, 'MAILROOM_TRUST_PROMOTE_SENDS', 100, 0, 1_000_000_000),
    windowHours: int(env, 'MAILROOM_TRUST_WINDOW_HOURS', 24, 1, 24 * 30),
    minSends: int(env, 'MAILROOM_TRUST_MIN_SENDS', 50, 1, 1_000_000),
    bouncePercent: percent(env, 'MAILROOM_TRUST_BOUNCE_PERCENT', 5),
    complaintPercent: percent(env, 'MAILROOM_TRUST_COMPLAINT_PERCENT', 0.3),
    bulkSize: int(env, 'MAILROOM_TRUST_BULK_SIZE', 100, 1, 1_000_000),
    youngDomainHours: int(env, 'MAILROOM_YOUNG_DOMAIN_HOURS', 24, 0, 24 * 365),
    onboardingFrom,
    onboardingDailyCap: int(env, 'MAILROOM_ONBOARDING_DAILY_CAP', 20, 1, 1_000_000),
  }
}

const ADDRESS = /^[^\s@<>]+@[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/i

function loadSupportDesk(env: Record<string, string | undefined>) {
  const supportEmail = env.MAILROOM_SUPPORT_EMAIL || undefined
  const supportFrom = env.MAILROOM_SUPPORT_FROM || undefined
  for (const [name, v] of [['MAILROOM_SUPPORT_EMAIL', supportEmail], ['MAILROOM_SUPPORT_FROM', supportFrom]]) {
    if (v !== undefined && !ADDRESS.test(v)) throw new ConfigError(`${name} must be an email address, got "${v}"`)
  }
  if (Boolean(supportEmail) !== Boolean(supportFrom)) throw new ConfigError('MAILROOM_SUPPORT_EMAIL and MAILROOM_SUPPORT_FROM must be set together')
  return { supportEmail, supportFrom: supportFrom?.toLowerCase() }
}

const BILLING_PLANS = ['starter', 'pro', 'scale']

function loadBilling(env: Record<string, string | undefined>): BillingSettings | undefined {
  const secretKey = env.MAILROOM_BILLING_SECRET_KEY || undefined
  const webhookSecret = env.MAILROOM_BILLING_WEBHOOK_SECRET || undefined
  if (Boolean(secretKey) !== Boolean(webhookSecret)) throw new ConfigError('MAILROOM_BILLING_SECRET_KEY and MAILROOM_BILLING_WEBHOOK_SECRET must be set together')
  if (!secretKey || !webhookSecret) return undefined
  const apiUrl = (env.MAILROOM_BILLING_API_URL || 'https://api.stripe.com').replace(/\/+$/, '')
  if (!/^https?:\/\/[^/]+/.test(apiUrl)) throw new ConfigError(`MAILROOM_BILLING_API_URL must be an http:// or https:// URL, got "${env.MAILROOM_BILLING_API_URL}"`)
  const terms = list(env.MAILROOM_BILLING_TERMS || 'monthly,yearly')
  let prices: Record<string, string> = Object.fromEntries(BILLING_PLANS.flatMap((p) => terms.map((t) => [`${p}_${t}`, `price_${p}_${t}`])))
  if (env.MAILROOM_BILLING_PRICES) {
    try {
      prices = JSON.parse(env.MAILROOM_BILLING_PRICES)
    } catch {
      throw new ConfigError('MAILROOM_BILLING_PRICES must be a JSON object of `plan_term` to price id, e.g. {"pro_monthly":"price_123"}')
    }
    for (const [k, v] of Object.entries(prices)) {
      const [plan, term] = k.split('_')
      if (!BILLING_PLANS.includes(plan) || !term || typeof v !== 'string' || !v) throw new ConfigError(`MAILROOM_BILLING_PRICES: "${k}" must name a plan (${BILLING_PLANS.join(', ')}) and a term, with a price id as its value`)
    }
  }
  // A term is on sale when it is listed and its price is known.
  return { secretKey, webhookSecret, apiUrl, prices: Object.fromEntries(Object.entries(prices).filter(([k]) => terms.includes(k.split('_')[1]))) }
}
