// Helpers for tests that speak SMTP to the inbound listener.
import { expect } from 'bun:test'
import nodemailer from 'nodemailer'
import { startDnsServer, type TestDnsServer } from './dns-server'
import { harness, type Harness } from './harness'

/** Adds a domain through the API, publishes its records in the test DNS server (MX → 127.0.0.1) and verifies it. */
export async function verifiedDomain(h: Harness, dns: TestDnsServer, name: string, receiving = true) {
  const created = await h.call('POST', '/domains', { body: { name, ...(receiving ? { capabilities: { sending: 'enabled', receiving: 'enabled' } } : {}) } })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  for (const r of created.body.records as { name: string; type: 'TXT' | 'MX' | 'CNAME'; value: string; priority?: number }[]) {
    dns.set(r.name, r.type, [r.type === 'MX' ? { exchange: r.value, priority: r.priority ?? 10 } : r.value])
  }
  const verified = await h.call('POST', `/domains/${created.body.id}/verify`)
  expect(verified.body.status).toBe('verified')
  return created.body as { id: string; name: string }
}

/** A one-message SMTP client for the listener (no pooling, STARTTLS when offered, the self-signed certificate accepted). */
export function smtpClient(port: number, extra: Record<string, unknown> = {}) {
  return nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, tls: { rejectUnauthorized: false }, name: 'client.sender.test', ...extra } as never)
}

/** Sends and returns the error (with its SMTP code) instead of throwing. */
export async function trySend(port: number, mail: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  try {
    const info = await smtpClient(port, extra).sendMail(mail as never)
    return { ok: true as const, info }
  } catch (e) {
    return { ok: false as const, error: e as Error & { responseCode?: number; response?: string; rejected?: string[] } }
  }
}

/**
 * The whole loop on loopback: the harness delivering in mx mode to its own SMTP
 * listener (MAILROOM_MX_PORT = the listener's port), with a real DNS server that
 * names 127.0.0.1 as the MX of `domains`, each verified with receiving on.
 */
export async function mxLoopback(domains: string[]) {
  const dns = await startDnsServer()
  const h = await harness({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_DELIVERY: 'mx' })
  const smtp = await h.listen()
  h.config.mxPort = smtp.port
  dns.set('mx.mailroom.test', 'A', ['127.0.0.1'])
  for (const name of domains) await verifiedDomain(h, dns, name)
  return {
    h,
    dns,
    async close() {
      await h.close()
      await dns.close()
    },
  }
}

/** `fn`'s first answer that is not undefined, asked every 50 ms for at most `ms`. */
export async function until<T>(fn: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v !== undefined) return v
    if (Date.now() > end) throw new Error('timed out')
    await Bun.sleep(50)
  }
}
