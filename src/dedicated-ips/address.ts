import ipaddr from 'ipaddr.js'
import { networkInterfaces } from 'node:os'

/** The canonical text of an address (dotted IPv4, RFC 5952 IPv6; IPv4-mapped IPv6 as IPv4), or null when it is none. */
export function canonicalIp(text: string): string | null {
  const raw = text.trim()
  if (!ipaddr.isValid(raw)) return null
  // ipaddr.js also reads "1", "0x7f.1" and other legacy IPv4 shapes; only the four-part dotted form is an address here.
  if (ipaddr.IPv4.isValid(raw) && !ipaddr.IPv4.isValidFourPartDecimal(raw)) return null
  return ipaddr.process(raw).toString()
}

export const familyOf = (ip: string): 4 | 6 => (ipaddr.parse(ip).kind() === 'ipv6' ? 6 : 4)

/**
 * Whether this host can send from the address: one of its interfaces' addresses,
 * or any of 127/8 on Linux, whose loopback answers for the whole block.
 */
export function isHostAddress(ip: string): boolean {
  if (process.platform === 'linux' && familyOf(ip) === 4 && ipaddr.parse(ip).range() === 'loopback') return true
  return Object.values(networkInterfaces()).some((list) => (list ?? []).some((a) => canonicalIp(a.address.split('%')[0]!) === ip))
}

/** The host's public interface addresses: the default outbound addresses when MAILROOM_OUTBOUND_IPS is unset. */
export function publicHostAddresses(): string[] {
  const out = new Set<string>()
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      const ip = canonicalIp(a.address.split('%')[0]!)
      if (ip && !a.internal && ipaddr.parse(ip).range() === 'unicast') out.add(ip)
    }
  }
  return [...out]
}

/** `4.3.2.1` for 1.2.3.4, and the nibbles of an IPv6 address, reversed: the left part of PTR and DNSBL names. */
export function reversedLabels(ip: string): string {
  const addr = ipaddr.parse(ip)
  if (addr.kind() === 'ipv4') return addr.toByteArray().reverse().join('.')
  return addr
    .toByteArray()
    .flatMap((b) => [b >> 4, b & 15])
    .reverse()
    .map((n) => n.toString(16))
    .join('.')
}

export const reverseName = (ip: string) => `${reversedLabels(ip)}.${familyOf(ip) === 4 ? 'in-addr.arpa' : 'ip6.arpa'}`
