import addressparser from 'nodemailer/lib/addressparser'
/** An address as given (`Name <a@b>` or `a@b`) and its plain, lower-case form. */
export interface Address {
  given: string
  name: string | null
  address: string
  domain: string
}

const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}$/
const DOMAIN = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]{0,61}[A-Za-z0-9]$/

/** A bare address: a dot-atom local part (no quoted forms) at a domain name with a dot. */
export function isPlainAddress(s: string) {
  const at = s.lastIndexOf('@')
  if (at <= 0) return false
  const local = s.slice(0, at)
  const domain = s.slice(at + 1)
  return LOCAL.test(local) && !local.startsWith('.') && !local.endsWith('.') && !local.includes('..') && DOMAIN.test(domain)
}

/**
 * Reads `a@b.com` or `Display Name <a@b.com>` (the name may be quoted). Anything
 * else, or a CR or LF anywhere (header injection), is null.
 */
export function parseAddress(input: string): Address | null {
  if (/[\r\n\0]/.test(input)) return null
  const s = input.trim()
  let name: string | null = null
  let addr = s
  const m = s.match(/^(.*?)\s*<([^<>]+)>$/)
  if (m) {
    name = m[1].trim()
    if (name.startsWith('"') && name.endsWith('"') && name.length >= 2) name = name.slice(1, -1).replace(/\\(.)/g, '$1')
    else if (/[<>"]/.test(name)) return null
    addr = m[2].trim()
    if (name === '') name = null
  } else if (/[<>\s]/.test(s)) {
    return null
  }
  if (!isPlainAddress(addr)) return null
  const address = addr.toLowerCase()
  return { given: s, name, address, domain: address.slice(address.lastIndexOf('@') + 1) }
}

/** One address or a list, as Resend takes them; null and undefined are none. */
export const asList = (v: string | string[] | null | undefined): string[] => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v])

/** True when `domain` is `entry` or a subdomain of it. */
export const domainMatches = (domain: string, entry: string) => domain === entry || domain.endsWith(`.${entry}`)

/** The bare address out of `Name <a@b>` or `a@b`, lower-case. */
export function bareAddress(value: string): string {
  const parsed = addressparser(value, { flatten: true })
  return (parsed[0]?.address || value).trim().toLowerCase()
}
