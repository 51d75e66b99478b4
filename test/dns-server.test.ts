// The test DNS server answers like a real one, seen through node:dns.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resolver } from 'node:dns/promises'
import { TCPClient, UDPClient } from 'dns2'
import { startDnsServer, type TestDnsServer } from './support/dns-server'

let dns: TestDnsServer
let resolver: Resolver

const raw = (name: string, type: string) => UDPClient({ dns: '127.0.0.1', port: dns.port } as any)(name, type)

beforeAll(async () => {
  dns = await startDnsServer()
  resolver = new Resolver({ timeout: 1000, tries: 1 })
  resolver.setServers([dns.address])
})
afterAll(async () => {
  await dns.close()
})

describe('test DNS server', () => {
  test('listens on 127.0.0.1 with a port in its address', () => {
    expect(dns.port).toBeGreaterThan(0)
    expect(dns.address).toBe(`127.0.0.1:${dns.port}`)
  })

  test('A, AAAA, MX, CNAME and TXT records', async () => {
    dns.set('host.example.test', 'A', ['192.0.2.1', '192.0.2.2'])
    dns.set('host.example.test', 'AAAA', ['2001:db8::1'])
    dns.set('example.test', 'MX', [
      { exchange: 'mx1.example.test', priority: 10 },
      { exchange: 'mx2.example.test', priority: 20 },
    ])
    dns.set('www.example.test', 'CNAME', ['host.example.test'])
    dns.set('example.test', 'TXT', ['v=spf1 -all', 'hello'])

    expect((await resolver.resolve4('host.example.test')).sort()).toEqual(['192.0.2.1', '192.0.2.2'])
    expect(await resolver.resolve6('host.example.test')).toEqual(['2001:db8::1'])
    const mx = await resolver.resolveMx('example.test')
    expect(mx.sort((a, b) => a.priority - b.priority)).toEqual([
      { exchange: 'mx1.example.test', priority: 10 },
      { exchange: 'mx2.example.test', priority: 20 },
    ])
    expect(await resolver.resolveCname('www.example.test')).toEqual(['host.example.test'])
    // A CNAME is followed for other types.
    expect((await resolver.resolve4('www.example.test')).sort()).toEqual(['192.0.2.1', '192.0.2.2'])
    const txt = await resolver.resolveTxt('example.test')
    expect(txt.map((t) => t.join('')).sort()).toEqual(['hello', 'v=spf1 -all'])
  })

  test('names are case-insensitive', async () => {
    dns.set('MiXeD.Example.TEST', 'TXT', ['yes'])
    expect(await resolver.resolveTxt('mixed.example.test')).toEqual([['yes']])
    expect(await resolver.resolveTxt('MIXED.EXAMPLE.TEST.')).toEqual([['yes']])
  })

  test('TXT values longer than 255 octets are split into strings', async () => {
    const long = 'v=DKIM1; k=rsa; p=' + 'A'.repeat(400)
    dns.set('sel._domainkey.example.test', 'TXT', [long])
    // On the wire: one TXT record made of two character-strings (255 + rest).
    const reply = await raw('sel._domainkey.example.test', 'TXT')
    expect(reply.answers.length).toBe(1)
    const strings = (reply.answers[0] as any).data as string[]
    expect(strings.map((s) => s.length)).toEqual([255, long.length - 255])
    expect(strings.join('')).toBe(long)
    // Through node:dns the pieces join back to the value. (Bun's resolveTxt lists
    // each character-string as its own entry; Node's groups them per record.)
    const txt = await resolver.resolveTxt('sel._domainkey.example.test')
    expect(txt.flat().join('')).toBe(long)
  })

  test('large answers come back whole (TCP fallback after truncation)', async () => {
    const many = Array.from({ length: 8 }, (_, i) => `record-${i}-` + 'x'.repeat(200))
    dns.set('big.example.test', 'TXT', many)
    const txt = await resolver.resolveTxt('big.example.test')
    expect(txt.map((t) => t.join('')).sort()).toEqual([...many].sort())
  })

  test('also answers over TCP', async () => {
    dns.set('tcp.example.test', 'A', ['192.0.2.9'])
    const resolve = TCPClient({ dns: '127.0.0.1', port: dns.port } as any)
    const reply = await resolve('tcp.example.test', 'A')
    expect(reply.answers.map((a: any) => a.address)).toEqual(['192.0.2.9'])
  })

  test('unknown names answer NXDOMAIN; a known name without the type answers NODATA', async () => {
    await expect(resolver.resolveTxt('nowhere.example.test')).rejects.toMatchObject({ code: 'ENOTFOUND' })
    expect((await raw('nowhere.example.test', 'TXT')).header.rcode).toBe(3)
    dns.set('only-a.example.test', 'A', ['192.0.2.3'])
    const nodata = await raw('only-a.example.test', 'TXT')
    expect(nodata.header.rcode).toBe(0)
    expect(nodata.answers).toEqual([])
    // (Bun's node:dns reports NODATA as ENOTFOUND as well.)
    await expect(resolver.resolveTxt('only-a.example.test')).rejects.toMatchObject({
      code: expect.stringMatching(/ENODATA|ENOTFOUND/),
    })
  })

  test('remove() drops one type or the whole name', async () => {
    dns.set('gone.example.test', 'A', ['192.0.2.4'])
    dns.set('gone.example.test', 'TXT', ['t'])
    dns.remove('GONE.example.test', 'TXT')
    expect((await raw('gone.example.test', 'TXT')).header.rcode).toBe(0)
    expect(await resolver.resolve4('gone.example.test')).toEqual(['192.0.2.4'])
    dns.remove('gone.example.test')
    expect((await raw('gone.example.test', 'A')).header.rcode).toBe(3)
  })

  test('failing(true) answers SERVFAIL to everything', async () => {
    dns.set('ok.example.test', 'A', ['192.0.2.5'])
    dns.failing(true)
    try {
      await expect(resolver.resolve4('ok.example.test')).rejects.toMatchObject({ code: 'ESERVFAIL' })
    } finally {
      dns.failing(false)
    }
    expect(await resolver.resolve4('ok.example.test')).toEqual(['192.0.2.5'])
  })

  test('failing(true, name) answers SERVFAIL for that name only; reset() forgets everything', async () => {
    dns.set('bad.example.test', 'A', ['192.0.2.12'])
    dns.set('good.example.test', 'A', ['192.0.2.13'])
    dns.failing(true, 'BAD.example.test')
    await expect(resolver.resolve4('bad.example.test')).rejects.toMatchObject({ code: 'ESERVFAIL' })
    expect(await resolver.resolve4('good.example.test')).toEqual(['192.0.2.13'])
    dns.failing(false, 'bad.example.test')
    expect(await resolver.resolve4('bad.example.test')).toEqual(['192.0.2.12'])
    dns.failing(true, 'bad.example.test')
    dns.reset()
    expect((await raw('bad.example.test', 'A')).header.rcode).toBe(3)
    expect(dns.queries).toEqual(['bad.example.test A'])
  })

  test('answers are not cached by the resolver (TTL 0)', async () => {
    dns.set('changing.example.test', 'A', ['192.0.2.10'])
    expect(await resolver.resolve4('changing.example.test')).toEqual(['192.0.2.10'])
    dns.set('changing.example.test', 'A', ['192.0.2.11'])
    expect(await resolver.resolve4('changing.example.test')).toEqual(['192.0.2.11'])
  })

  test('records queries', async () => {
    dns.set('seen.example.test', 'A', ['192.0.2.6'])
    await resolver.resolve4('Seen.Example.test')
    expect(dns.queries).toContain('seen.example.test A')
  })

  test('close() frees the port', async () => {
    const other = await startDnsServer()
    const r = new Resolver({ timeout: 300, tries: 1 })
    r.setServers([other.address])
    other.set('x.test', 'A', ['192.0.2.7'])
    expect(await r.resolve4('x.test')).toEqual(['192.0.2.7'])
    await other.close()
    await expect(r.resolve4('x.test')).rejects.toMatchObject({ code: expect.stringMatching(/ETIMEOUT|ECONNREFUSED/) })
  })
})
