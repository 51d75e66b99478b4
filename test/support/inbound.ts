// Helpers for tests that speak SMTP to the inbound listener.
import { expect } from 'bun:test'
import nodemailer from 'nodemailer'
import type { TestDnsServer } from './dns-server'
import type { Harness } from './harness'

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
