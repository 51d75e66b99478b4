import { expect, test } from 'bun:test'
import { harness } from './support/harness'
import { message, verifiedDomain } from './support/emails'

test('click tracking without a verified tracking host is a tracking_subdomain_unverified warning: the send goes, links as written', async () => {
  const h = await harness()
  await verifiedDomain(h, 'acme.dev', { clickTracking: true })
  const pre = await h.call('POST', '/emails/preflight', { body: message() })
  expect(pre.status).toBe(200)
  const finding = (pre.body.findings as { code: string; severity: string }[]).find((f) => f.code === 'tracking_subdomain_unverified')
  expect(finding).toMatchObject({ severity: 'warning' })
  const sent = await h.call('POST', '/emails', { body: message() })
  expect(sent.status).toBe(200)
  const explain = await h.call('GET', `/emails/${sent.body.id}/explain`)
  expect(JSON.stringify(explain.body)).toContain('tracking_subdomain_unverified')
  // Asked off for this send: no warning.
  const off = await h.call('POST', '/emails/preflight', { body: message({ click_tracking: false }) })
  expect((off.body.findings as { code: string }[]).map((f) => f.code)).not.toContain('tracking_subdomain_unverified')
  await h.close()
})
