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
  }
}
