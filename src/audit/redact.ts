/**
 * The one place that decides what a secret looks like, for the audit trail and
 * the request logs alike: members named like a credential lose their value, and
 * credential-shaped text (our API tokens, webhook signing secrets, PEM private
 * keys) is cut out of any string, whatever member holds it.
 */

export const REDACTED = '[redacted]'

/** How secret member names end, compared without case, `_` or `-`: `token`, `token_hash`, `signing_secret`, `dkimPrivateKey`, `Authorization`… */
const SECRET_WORDS = ['token', 'tokenhash', 'secret', 'password', 'passwd', 'privatekey', 'apikey', 'authorization', 'cookie', 'recoverycodes']
const SECRET_NAME = new RegExp(`(${SECRET_WORDS.join('|')})$`)
/** Names that end like a secret but are safe to show. */
const SHOWN = new Set(['tokenprefix'])

/** Each pattern with a piece of text it cannot match without: a cheap check, so nearly every string runs no pattern. */
const SECRET_TEXT: [marker: string, pattern: RegExp][] = [
  ['mr_', /\bmr_[A-Za-z0-9_]{16,}/g],
  // OAuth authorization codes, access and refresh tokens (src/oauth/tokens.ts).
  ...['mrac_', 'mrat_', 'mrrt_'].map((prefix): [string, RegExp] => [prefix, new RegExp(`\\b${prefix}[A-Za-z0-9]{16,}`, 'g')]),
  ['whsec_', /\bwhsec_[A-Za-z0-9+/=]{8,}/g],
  // A TOTP enrolment's URI carries its secret; an invitation's accept URL its token.
  ['otpauth:', /\botpauth:\/\/[^\s"]+/g],
  ['/invite/', /(?<=\/invite\/)[A-Za-z0-9]{16,}(?=\/)/g],
  ['-----BEGIN', /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g],
]

/** Every request log entry asks about the same few names: answers are kept (a bounded map; a flood of new names only clears it). */
const verdicts = new Map<string, boolean>()

export function isSecretName(name: string) {
  let secret = verdicts.get(name)
  if (secret === undefined) {
    const n = name.toLowerCase().replace(/[_-]/g, '')
    secret = SECRET_NAME.test(n) && !SHOWN.has(n)
    if (verdicts.size >= 10_000) verdicts.clear()
    verdicts.set(name, secret)
  }
  return secret
}

export function redactText(s: string): string {
  let out = s
  for (const [marker, pattern] of SECRET_TEXT) if (out.includes(marker)) out = out.replace(pattern, REDACTED)
  return out
}

/** A URL as a log may show it: without user and password, and without the value of a query member named like a secret (libSQL's `?authToken=`). */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//').replace(/([?&])([^=&#]+)=([^&#]*)/g, (all, sep: string, name: string) => (isSecretName(name) ? `${sep}${name}=${REDACTED}` : all))
}

export interface RedactOptions {
  /** Strings longer than this keep their start and say how long they were (attachment contents, HTML bodies). */
  maxString?: number
}

/** Whether JSON text may hold something `redact` changes: a secret word anywhere, or a marker of secret text. */
function mayHoldSecrets(json: string) {
  if (SECRET_TEXT.some(([marker]) => json.includes(marker))) return true
  const plain = json.toLowerCase().replace(/[_-]/g, '')
  return SECRET_WORDS.some((w) => plain.includes(w))
}

/**
 * `value` as redacted JSON text. Most bodies hold no secret word, no marker and
 * no long string: then the plain text is the answer, without walking a copy.
 */
export function redactedJson(value: unknown, opts: RedactOptions = {}): string {
  const text = JSON.stringify(value)
  if (text.length <= (opts.maxString ?? Infinity) && !mayHoldSecrets(text)) return text
  return JSON.stringify(redact(value, opts))
}

/** A copy of `value` with secrets replaced; JSON-safe values only (what a reply or a parsed body holds). */
export function redact<T>(value: T, opts: RedactOptions = {}): T {
  return walk(value, opts.maxString ?? Infinity) as T
}

function walk(v: unknown, maxString: number): unknown {
  if (typeof v === 'string') return redactText(v.length > maxString ? `${v.slice(0, maxString)}… (${v.length} characters)` : v)
  if (Array.isArray(v)) return v.map((x) => walk(x, maxString))
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) out[k] = isSecretName(k) && x !== null && x !== undefined ? REDACTED : walk(x, maxString)
    return out
  }
  return v
}
