import dgram from 'node:dgram'
import { getServers } from 'node:dns'
import net from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * A small stub resolver for the domain checks: asks the configured DNS servers
 * (MAILROOM_DNS_SERVERS, else the system's) for TXT, MX and CNAME records over
 * UDP, falling back to TCP when an answer is truncated.
 *
 * Why not node:dns: Bun's `resolveTxt` lists every character-string of a TXT
 * record as a record of its own, so a 2048-bit DKIM key (published as two
 * strings) and two separate records could not be told apart. DKIM and SPF
 * checks need the record boundaries, so this client reads the wire format itself.
 */

export type Lookup<T> =
  /** The name exists; `values` may be empty (no record of that type). */
  | { kind: 'found'; values: T[] }
  /** NXDOMAIN. */
  | { kind: 'nxdomain' }
  /** No definitive answer: every server timed out, refused, or failed (SERVFAIL). */
  | { kind: 'error'; reason: string }

export interface Mx {
  exchange: string
  priority: number
}

export interface DnsClient {
  /** Each TXT record's character-strings joined into one value (RFC 7208 §3.3, RFC 6376 §3.6.2.2). */
  txt(name: string): Promise<Lookup<string>>
  mx(name: string): Promise<Lookup<Mx>>
  cname(name: string): Promise<Lookup<string>>
  /** IPv4 addresses (blocklist answers and forward-confirmed reverse DNS). */
  a(name: string): Promise<Lookup<string>>
  aaaa(name: string): Promise<Lookup<string>>
  /** Host names of a reverse name (`4.3.2.1.in-addr.arpa`). */
  ptr(name: string): Promise<Lookup<string>>
  /** How many queries got no definitive answer, and how many were asked. */
  readonly stats: { asked: number; failed: number }
}

const TYPE = { A: 1, CNAME: 5, PTR: 12, MX: 15, TXT: 16, AAAA: 28, OPT: 41 } as const
const RCODE_NAMES: Record<number, string> = { 1: 'FORMERR', 2: 'SERVFAIL', 4: 'NOTIMP', 5: 'REFUSED' }

interface Server {
  host: string
  port: number
  family: 4 | 6
  label: string
}

/** `ip`, `ip:port`, `[v6]` or `[v6]:port`, as MAILROOM_DNS_SERVERS and `dns.getServers()` give them. */
export function parseServer(s: string): Server {
  let host = s
  let port = 53
  const v6 = s.match(/^\[([^\]]+)\](?::(\d+))?$/)
  if (v6) {
    host = v6[1]!
    if (v6[2]) port = Number(v6[2])
  } else if (net.isIPv6(s)) {
    host = s
  } else {
    const m = s.match(/^([^:]+)(?::(\d+))?$/)
    if (m) {
      host = m[1]!
      if (m[2]) port = Number(m[2])
    }
  }
  const family = net.isIPv6(host) ? 6 : 4
  return { host, port, family, label: family === 6 ? `[${host}]:${port}` : `${host}:${port}` }
}

function encodeName(name: string): Buffer {
  const labels = name.replace(/\.$/, '').split('.').filter(Boolean)
  const parts: Buffer[] = []
  for (const l of labels) {
    const b = Buffer.from(l, 'utf8')
    if (b.length > 63) throw new Error(`DNS label longer than 63 octets in ${name}`)
    parts.push(Buffer.from([b.length]), b)
  }
  parts.push(Buffer.from([0]))
  const out = Buffer.concat(parts)
  if (out.length > 255) throw new Error(`DNS name longer than 255 octets: ${name}`)
  return out
}

function buildQuery(id: number, name: string, type: number): Buffer {
  const header = Buffer.alloc(12)
  header.writeUInt16BE(id, 0)
  header.writeUInt16BE(0x0100, 2) // RD
  header.writeUInt16BE(1, 4) // QDCOUNT
  header.writeUInt16BE(1, 10) // ARCOUNT: the EDNS(0) OPT below
  const question = Buffer.alloc(4)
  question.writeUInt16BE(type, 0)
  question.writeUInt16BE(1, 2) // IN
  // OPT: root name, type 41, UDP payload 1232 (the DNS flag day size), no options.
  const opt = Buffer.from([0, 0, TYPE.OPT, 0x04, 0xd0, 0, 0, 0, 0, 0, 0])
  return Buffer.concat([header, encodeName(name), question, opt])
}

function readName(buf: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = []
  let pos = offset
  let next = -1
  for (let jumps = 0; ; ) {
    if (pos >= buf.length) throw new Error('name runs past the message')
    const len = buf[pos]!
    if ((len & 0xc0) === 0xc0) {
      if (pos + 1 >= buf.length) throw new Error('truncated pointer')
      if (next < 0) next = pos + 2
      pos = ((len & 0x3f) << 8) | buf[pos + 1]!
      if (++jumps > 64) throw new Error('compression loop')
      continue
    }
    if (len === 0) {
      if (next < 0) next = pos + 1
      break
    }
    labels.push(buf.toString('utf8', pos + 1, pos + 1 + len))
    pos += 1 + len
  }
  return { name: labels.join('.').toLowerCase(), next }
}

interface Message {
  id: number
  tc: boolean
  rcode: number
  answers: { name: string; type: number; data: unknown }[]
}

function parseMessage(buf: Buffer): Message {
  if (buf.length < 12) throw new Error('message shorter than its header')
  const id = buf.readUInt16BE(0)
  const flags = buf.readUInt16BE(2)
  const qd = buf.readUInt16BE(4)
  const an = buf.readUInt16BE(6)
  let pos = 12
  for (let i = 0; i < qd; i++) pos = readName(buf, pos).next + 4
  const answers: Message['answers'] = []
  for (let i = 0; i < an; i++) {
    const { name, next } = readName(buf, pos)
    pos = next
    const type = buf.readUInt16BE(pos)
    const rdlen = buf.readUInt16BE(pos + 8)
    const start = pos + 10
    const end = start + rdlen
    if (end > buf.length) throw new Error('record runs past the message')
    let data: unknown
    if (type === TYPE.TXT) {
      const strings: Buffer[] = []
      for (let p = start; p < end; ) {
        const l = buf[p]!
        strings.push(buf.subarray(p + 1, p + 1 + l))
        p += 1 + l
      }
      data = Buffer.concat(strings).toString('utf8')
    } else if (type === TYPE.MX) {
      data = { priority: buf.readUInt16BE(start), exchange: readName(buf, start + 2).name }
    } else if (type === TYPE.CNAME || type === TYPE.PTR) {
      data = readName(buf, start).name
    } else if (type === TYPE.A && rdlen === 4) {
      data = [...buf.subarray(start, end)].join('.')
    } else if (type === TYPE.AAAA && rdlen === 16) {
      data = ipaddr.fromByteArray([...buf.subarray(start, end)]).toString()
    }
    answers.push({ name, type, data })
    pos = end
  }
  return { id, tc: (flags & 0x0200) !== 0, rcode: flags & 0x000f, answers }
}

class QueryFailed extends Error {
  constructor(message: string, readonly dead = false) {
    super(message)
  }
}

function viaUdp(server: Server, query: Buffer, id: number, timeoutMs: number): Promise<Message> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(server.family === 6 ? 'udp6' : 'udp4')
    let done = false
    const finish = (err: Error | null, msg?: Message) => {
      if (done) return
      done = true
      clearTimeout(timer)
      try {
        socket.close()
      } catch {
        // already closed
      }
      if (err) reject(err)
      else resolve(msg!)
    }
    const timer = setTimeout(() => finish(new QueryFailed(`no answer from ${server.label} within ${timeoutMs} ms`, true)), timeoutMs)
    socket.on('error', (e: NodeJS.ErrnoException) => finish(new QueryFailed(`${server.label}: ${e.code ?? e.message}`, true)))
    socket.on('message', (buf) => {
      try {
        const msg = parseMessage(buf)
        if (msg.id !== id) return
        finish(null, msg)
      } catch (e) {
        finish(new QueryFailed(`${server.label} sent an unreadable answer: ${(e as Error).message}`))
      }
    })
    socket.connect(server.port, server.host, () => {
      socket.send(query, (e) => e && finish(new QueryFailed(`${server.label}: ${(e as NodeJS.ErrnoException).code ?? e.message}`, true)))
    })
  })
}

function viaTcp(server: Server, query: Buffer, id: number, timeoutMs: number): Promise<Message> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: server.host, port: server.port })
    let buf = Buffer.alloc(0)
    let done = false
    const finish = (err: Error | null, msg?: Message) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      if (err) reject(err)
      else resolve(msg!)
    }
    const timer = setTimeout(() => finish(new QueryFailed(`no answer from ${server.label} (TCP) within ${timeoutMs} ms`, true)), timeoutMs)
    socket.on('error', (e: NodeJS.ErrnoException) => finish(new QueryFailed(`${server.label} (TCP): ${e.code ?? e.message}`, true)))
    socket.on('connect', () => {
      const len = Buffer.alloc(2)
      len.writeUInt16BE(query.length)
      socket.write(Buffer.concat([len, query]))
    })
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      if (buf.length < 2) return
      const need = buf.readUInt16BE(0)
      if (buf.length < 2 + need) return
      try {
        const msg = parseMessage(buf.subarray(2, 2 + need))
        if (msg.id !== id) throw new Error('answer to another query')
        finish(null, msg)
      } catch (e) {
        finish(new QueryFailed(`${server.label} sent an unreadable answer: ${(e as Error).message}`))
      }
    })
    socket.on('end', () => finish(new QueryFailed(`${server.label} (TCP) closed without an answer`)))
  })
}

export interface DnsClientOptions {
  /** Per attempt; default 1500 ms. */
  timeoutMs?: number
  /** Attempts per server over UDP; default 2. */
  tries?: number
}

/**
 * A client for one round of checks. A server that timed out or refused the
 * connection is skipped for the rest of the round, so a dead resolver costs one
 * timeout, not one per query.
 */
export function dnsClient(servers: string[], opts: DnsClientOptions = {}): DnsClient {
  const list = (servers.length ? servers : getServers()).map(parseServer)
  const timeoutMs = opts.timeoutMs ?? 1500
  const tries = opts.tries ?? 2
  const dead = new Set<string>()
  const stats = { asked: 0, failed: 0 }

  async function ask(name: string, type: number): Promise<{ kind: 'answer'; msg: Message } | { kind: 'error'; reason: string }> {
    stats.asked++
    let query: Buffer
    const id = Math.floor(Math.random() * 0x10000)
    try {
      query = buildQuery(id, name, type)
    } catch (e) {
      stats.failed++
      return { kind: 'error', reason: (e as Error).message }
    }
    const reasons: string[] = []
    for (const server of list) {
      if (dead.has(server.label)) {
        reasons.push(`${server.label} did not answer earlier`)
        continue
      }
      for (let attempt = 0; attempt < tries; attempt++) {
        try {
          let msg = await viaUdp(server, query, id, timeoutMs)
          if (msg.tc) msg = await viaTcp(server, query, id, timeoutMs * 2)
          if (msg.rcode === 0 || msg.rcode === 3) return { kind: 'answer', msg }
          reasons.push(`${server.label} answered ${RCODE_NAMES[msg.rcode] ?? `rcode ${msg.rcode}`}`)
          break
        } catch (e) {
          const err = e as QueryFailed
          if (err.dead && attempt === tries - 1) {
            dead.add(server.label)
            reasons.push(err.message)
          } else if (!err.dead) {
            reasons.push(err.message)
            break
          }
        }
      }
    }
    stats.failed++
    return { kind: 'error', reason: reasons.join('; ') || 'no DNS server configured' }
  }

  async function lookup<T>(name: string, type: number): Promise<Lookup<T>> {
    const r = await ask(name, type)
    if (r.kind === 'error') return r
    if (r.msg.rcode === 3) return { kind: 'nxdomain' }
    return { kind: 'found', values: r.msg.answers.filter((a) => a.type === type).map((a) => a.data as T) }
  }

  return {
    stats,
    txt: (name) => lookup<string>(name, TYPE.TXT),
    mx: (name) => lookup<Mx>(name, TYPE.MX),
    cname: (name) => lookup<string>(name, TYPE.CNAME),
    a: (name) => lookup<string>(name, TYPE.A),
    aaaa: (name) => lookup<string>(name, TYPE.AAAA),
    ptr: (name) => lookup<string>(name, TYPE.PTR),
  }
}
