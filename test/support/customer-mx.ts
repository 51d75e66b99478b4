// The recipients' side of a real delivery: an SMTP sink on 127.0.0.1, named as the
// MX of customer.test by a real DNS server, and the settings that make a harness
// deliver there directly (mx mode).
import { startDnsServer } from './dns-server'
import { startSmtpSink } from './smtp-sink'

export async function customerMx() {
  const dns = await startDnsServer()
  const sink = await startSmtpSink()
  dns.set('customer.test', 'MX', [{ exchange: 'mail.customer.test', priority: 10 }])
  dns.set('mail.customer.test', 'A', ['127.0.0.1'])
  return {
    dns,
    sink,
    env: { MAILROOM_DNS_SERVERS: dns.address, MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_MX_PORT: String(sink.port), MAILROOM_DELIVERY: 'mx' },
    async close() {
      await sink.close()
      await dns.close()
    },
  }
}

export type CustomerMx = Awaited<ReturnType<typeof customerMx>>
