// Inbound: Postfix's smtp-source hands messages to Mailroom's SMTP listener, each
// stored raw, parsed and authenticated (SPF, DKIM, DMARC) before the 250 reply.
import { createClient } from '@libsql/client'
import { join } from 'node:path'
import { startDnsServer } from '../support/dns-server'
import { BUN, freePort, has, startProcess, stop, tempDir, waitFor } from './lib'

/**
 * A resolver on loopback answering NXDOMAIN to everything: dnsmasq (Debian) where it
 * is installed, as a real deployment's resolver answers; otherwise the test DNS server,
 * which is JavaScript and itself limits the rate.
 */
async function quietResolver(): Promise<{ address: string; name: string; close(): Promise<void> }> {
  if (has('dnsmasq')) {
    const port = await freePort()
    const p = startProcess(['dnsmasq', '-k', '-p', String(port), '--listen-address=127.0.0.1', '--bind-interfaces', '--no-resolv', '--no-hosts', '--local=/#/', '--conf-file=/dev/null'], {})
    await Bun.sleep(300)
    return { address: `127.0.0.1:${port}`, name: 'dnsmasq', close: () => stop(p) }
  }
  const dns = await startDnsServer()
  return { address: dns.address, name: 'test DNS server (dns2)', close: () => dns.close() }
}

/**
 * `reuse`: smtp-source keeps each connection for many messages (`-d`), as MTAs with
 * connection caching do; otherwise every message opens a new connection, which pays
 * smtp-server's fixed 100 ms greeting pause (its early-talker check): `sessions` in
 * parallel then bound the rate at `sessions` × 10 a second, whatever the server's work.
 */
export async function inboundPerSecond(n: number, reuse: boolean, sessions = 20) {
  const dns = await quietResolver()
  const http = await freePort()
  const smtp = await freePort()
  const dir = tempDir('inbound')
  const p = startProcess([BUN, 'src/index.ts'], {
    PORT: String(http),
    MAILROOM_DATA_DIR: dir,
    MAILROOM_BOOTSTRAP_KEY: 'mr_bench_bench_bench_bench_bench_bench_1234',
    MAILROOM_HOSTNAME: 'bench.local',
    MAILROOM_DELIVERY: 'capture',
    MAILROOM_DNS_SERVERS: dns.address,
    MAILROOM_SMTP_PORT: String(smtp),
    MAILROOM_SMTP_HOST: '127.0.0.1',
    MAILROOM_SMTP_RATE_LIMIT: '1000000',
    MAILROOM_SMTP_MAX_CONNECTIONS: String(Math.max(100, sessions * 2)),
  })
  try {
    await waitFor(`http://127.0.0.1:${http}/health`)
    const db = createClient({ url: `file:${join(dir, 'mailroom.db')}` })
    // The server writes as it starts (the request log, the first checks): wait for its lock.
    await db.execute('PRAGMA busy_timeout = 10000')
    const account = (await db.execute('select id from accounts limit 1')).rows[0].id as string
    const now = new Date().toISOString()
    await db.execute({
      sql: `insert into domains (id, account_id, name, region, status, custom_return_path, click_tracking, open_tracking, tls, sending_enabled, receiving_enabled,
        dkim_selector, dkim_private_key, dkim_public_key, records, created_at, updated_at) values (?, ?, 'inbound.test', 'us', 'verified', 'send', 0, 0, 'opportunistic', 1, 1, 'x', 'x', 'x', '[]', ?, ?)`,
      args: [crypto.randomUUID(), account, now, now],
    })
    const t0 = performance.now()
    const src = startProcess(['smtp-source', ...(reuse ? ['-d'] : []), '-s', String(sessions), '-m', String(n), '-l', '5120', '-f', 'sender@elsewhere.test', '-t', 'inbox@inbound.test', `127.0.0.1:${smtp}`], {})
    await src.exited
    const seconds = (performance.now() - t0) / 1000
    const stored = Number((await db.execute('select count(*) as n from inbound_emails')).rows[0].n)
    db.close()
    return { perSecond: stored / seconds, stored, sent: n, resolver: dns.name }
  } finally {
    await stop(p)
    await dns.close()
  }
}
