// A real, authoritative-style DNS server for tests, on 127.0.0.1 (UDP and TCP on
// the same random port). Point Mailroom at it with
// `harness({ MAILROOM_DNS_SERVERS: dns.address })`.
//
//   const dns = await startDnsServer()
//   dns.set('example.com', 'MX', [{ exchange: 'mx.example.com', priority: 10 }])
//   dns.set('example.com', 'TXT', ['v=spf1 -all'])
//   dns.failing(true);   // SERVFAIL to everything
//   await dns.close()
//
// Names are case-insensitive. Unknown names answer NXDOMAIN; a known name with
// no record of the asked type answers NOERROR with no answers (NODATA). TXT
// values longer than 255 octets are split into several character-strings, as
// real servers do. A CNAME is followed inside the zone.
import type { AddressInfo, Socket } from 'node:net'
import { Packet, TCPServer, UDPServer } from 'dns2'

export type DnsRecordType = 'A' | 'AAAA' | 'MX' | 'TXT' | 'CNAME' | 'PTR'
export type DnsRecordValue = string | { exchange: string; priority: number }

export interface TestDnsServer {
  port: number
  /** "127.0.0.1:PORT", the form MAILROOM_DNS_SERVERS and Resolver#setServers take. */
  address: string
  /** Replaces every record of `type` at `name`. An empty list keeps the name known (NODATA). */
  set(name: string, type: DnsRecordType, records: DnsRecordValue[]): void
  /** Removes the records of `type` at `name`, or every record at `name`. */
  remove(name: string, type?: DnsRecordType): void
  /** While on, every query answers SERVFAIL; with `name`, only queries for that name do. */
  failing(on: boolean, name?: string): void
  /** Forgets every record and every failure (between tests sharing one server). */
  reset(): void
  /** Queries seen so far, as `name TYPE` (lower-case name). */
  queries: string[]
  close(): Promise<void>
}

const TTL = 0; // resolvers (c-ares keeps a query cache) must not cache test answers
const TYPES: Record<DnsRecordType, number> = {
  A: Packet.TYPE.A,
  AAAA: Packet.TYPE.AAAA,
  MX: Packet.TYPE.MX,
  TXT: Packet.TYPE.TXT,
  CNAME: Packet.TYPE.CNAME,
  PTR: Packet.TYPE.PTR,
}
const TYPE_NAMES = new Map<number, string>(Object.entries(TYPES).map(([k, v]) => [v, k]))

const norm = (name: string) => name.trim().replace(/\.$/, '').toLowerCase()

/** RFC 1035 §3.3.14 / RFC 7208 §3.3: one TXT value as ≤255-octet character-strings. */
export function splitTxt(value: string): Buffer[] {
  const bytes = Buffer.from(value, 'utf8')
  if (bytes.length === 0) return [bytes]
  const parts: Buffer[] = []
  for (let i = 0; i < bytes.length; i += 255) parts.push(bytes.subarray(i, i + 255))
  return parts
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, Map<DnsRecordType, DnsRecordValue[]>>()
  let failing = false
  const failingNames = new Set<string>()
  const queries: string[] = []

  function resource(name: string, type: DnsRecordType, value: DnsRecordValue): any {
    const base = { name, type: TYPES[type], class: Packet.CLASS.IN, ttl: TTL }
    switch (type) {
      case 'A':
      case 'AAAA':
        return { ...base, address: String(value) }
      case 'CNAME':
      case 'PTR':
        return { ...base, domain: norm(String(value)) }
      case 'TXT':
        return { ...base, data: splitTxt(String(value)) }
      case 'MX': {
        const mx = typeof value === 'string' ? { exchange: value, priority: 10 } : value
        return { ...base, exchange: norm(mx.exchange), priority: mx.priority }
      }
    }
  }

  const handle = (request: Packet, send: (response: Packet) => Promise<Buffer>) => {
    const response = Packet.createResponseFromRequest(request)
    response.header.aa = 1
    response.header.ra = 1
    const [question] = request.questions
    if (!question) {
      response.header.rcode = Packet.RCODE.FORMERR
      void send(response).catch(() => {})
      return
    }
    const qtype = TYPE_NAMES.get(question.type) as DnsRecordType | undefined
    queries.push(`${norm(question.name)} ${qtype ?? question.type}`)
    if (failing || failingNames.has(norm(question.name))) {
      response.header.rcode = Packet.RCODE.SERVFAIL
      void send(response).catch(() => {})
      return
    }
    let name = norm(question.name)
    const answerName = question.name
    const seen = new Set<string>()
    let owner = answerName
    for (;;) {
      const node = zone.get(name)
      if (!node) {
        // Unknown name: NXDOMAIN, unless we got here by following a CNAME.
        if (seen.size === 0) response.header.rcode = Packet.RCODE.NXDOMAIN
        break
      }
      const cname = node.get('CNAME')
      if (qtype !== 'CNAME' && cname && cname.length > 0 && !seen.has(name)) {
        seen.add(name)
        response.answers.push(resource(owner, 'CNAME', cname[0]!))
        name = norm(String(cname[0]))
        owner = name
        continue
      }
      if (qtype) for (const v of node.get(qtype) ?? []) response.answers.push(resource(owner, qtype, v))
      break
    }
    void send(response).catch(() => {})
  }

  // UDP first on a random port, then TCP on the same port (retry if it is taken).
  let udp!: UDPServer
  let tcp!: TCPServer
  let port = 0
  for (let attempt = 0; ; attempt++) {
    udp = new UDPServer({ type: 'udp4' })
    udp.on('request', handle as any)
    udp.on('requestError', () => {})
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject)
      udp.bind(0, '127.0.0.1', () => resolve())
    })
    port = (udp.address() as AddressInfo).port
    tcp = new TCPServer()
    tcp.on('request', handle as any)
    tcp.on('requestError', () => {})
    const ok = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false))
      tcp.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (ok) break
    udp.close()
    if (attempt > 20) throw new Error('dns-server: no free port for UDP+TCP')
  }

  const sockets = new Set<Socket>()
  tcp.on('connection', (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })

  return {
    port,
    address: `127.0.0.1:${port}`,
    queries,
    set(name, type, records) {
      const key = norm(name)
      let node = zone.get(key)
      if (!node) zone.set(key, (node = new Map()))
      node.set(type, [...records])
    },
    remove(name, type) {
      const key = norm(name)
      if (!type) {
        zone.delete(key)
        return
      }
      const node = zone.get(key)
      if (!node) return
      node.delete(type)
      if (node.size === 0) zone.delete(key)
    },
    failing(on, name) {
      if (name === undefined) failing = on
      else if (on) failingNames.add(norm(name))
      else failingNames.delete(norm(name))
    },
    reset() {
      zone.clear()
      failing = false
      failingNames.clear()
      queries.length = 0
    },
    async close() {
      for (const s of sockets) s.destroy()
      await Promise.all([
        new Promise<void>((resolve) => {
          try {
            udp.close(() => resolve())
          } catch {
            resolve()
          }
        }),
        new Promise<void>((resolve) => tcp.close(() => resolve())),
      ])
    },
  }
}
