// Postfix (Debian) beside Mailroom: what a self-hoster would run instead, measured in
// the same run on the same loopback sink. The bench starts its own instance (its own
// configuration and queue under a temp folder, smtpd on a loopback port, relayhost the
// sink, no local delivery), never the system's.
import { spawnSync } from 'bun'
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, has, startProcess, startSink, tempDir } from './lib'

/** Why Postfix cannot run here, or null when it can. */
export function postfixMissing(): string | null {
  if (!has('postfix') || !has('smtp-sink') || !has('smtp-source')) return 'postfix, smtp-sink or smtp-source is not installed (apt-get install postfix)'
  if (process.getuid?.() !== 0) return 'Postfix starts its master as root (the bench runs as an unprivileged user)'
  if (spawnSync(['getent', 'passwd', 'postfix']).exitCode !== 0) return 'the postfix user is missing'
  return null
}

/** Every service runs outside a chroot: the temp queue folder holds none of the files a chroot needs. */
const MASTER = `
SMTPPORT inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`

export interface Postfix {
  port: number
  /** Messages the log says were relayed (`status=sent`). */
  relayed(): number
  /** Messages still in the queue. */
  queued(): number
  close(): Promise<void>
}

export async function startPostfix(sinkPort: number): Promise<Postfix> {
  const dir = tempDir('postfix')
  const conf = join(dir, 'conf')
  const queue = join(dir, 'queue')
  const log = join(dir, 'maillog')
  const port = await freePort()
  spawnSync(['mkdir', '-p', conf, queue, join(dir, 'data')])
  // Postfix's daemons run as the postfix user: it must reach the folders.
  chmodSync(dir, 0o755)
  spawnSync(['chown', 'postfix', join(dir, 'data')])
  writeFileSync(join(conf, 'master.cf'), MASTER.replace('SMTPPORT', `127.0.0.1:${port}`))
  writeFileSync(
    join(conf, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${queue}`,
      `data_directory = ${join(dir, 'data')}`,
      `maillog_file = ${log}`,
      `maillog_file_prefixes = ${dir}`,
      'myhostname = postfix.bench.local',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'mynetworks = 127.0.0.0/8',
      'mydestination =',
      'local_recipient_maps =',
      'local_transport = error:no local delivery',
      'alias_maps =',
      'alias_database =',
      `relayhost = [127.0.0.1]:${sinkPort}`,
      'smtp_dns_support_level = disabled',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      'biff = no',
      'smtp_tls_security_level = none',
      'smtpd_tls_security_level = none',
    ].join('\n') + '\n',
  )
  const started = spawnSync(['postfix', '-c', conf, 'start'], { stderr: 'pipe', stdout: 'pipe' })
  if (started.exitCode !== 0) throw new Error(`postfix -c ${conf} start failed${existsSync(log) ? `: ${readFileSync(log, 'utf8').slice(-500)}` : ' (it reports its errors only to a terminal: run that command in one)'}`)
  const until = Date.now() + 10_000
  while (!(await listening(port)) && Date.now() < until) await Bun.sleep(100)
  const count = (dirs: string[]) => dirs.reduce((n, d) => n + walk(join(queue, d)), 0)
  return {
    port,
    relayed: () => (existsSync(log) ? (readFileSync(log, 'utf8').match(/ status=sent /g)?.length ?? 0) : 0),
    queued: () => count(['maildrop', 'incoming', 'active', 'deferred']),
    async close() {
      spawnSync(['postfix', '-c', conf, 'stop'])
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

const walk = (d: string): number => (existsSync(d) ? readdirSync(d, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? walk(join(d, e.name)) : 1), 0) : 0)

async function listening(port: number) {
  try {
    const s = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
    s.end()
    return true
  } catch {
    return false
  }
}

/** smtp-source's load: `sessions` in parallel, `-d` keeps each connection for many messages. */
export async function smtpSource(port: number, n: number, opts: { bytes: number; reuse?: boolean; sessions?: number; from?: string; to?: string }) {
  const t0 = performance.now()
  const args = ['smtp-source', ...(opts.reuse ? ['-d'] : []), '-s', String(opts.sessions ?? 20), '-m', String(n), '-l', String(opts.bytes)]
  const src = startProcess([...args, '-f', opts.from ?? 'a@bench.test', '-t', opts.to ?? 'b@sink.test', `127.0.0.1:${port}`], {})
  await src.exited
  return (performance.now() - t0) / 1000
}

/**
 * Postfix relaying `n` messages of `bytes` into the sink: smtp-source hands them to
 * its smtpd (20 sessions, connections reused) and Postfix's own smtp client delivers
 * them; timed from the first message in to the last relayed out.
 */
export async function postfixRelay(n: number, bytes: number) {
  // The sink writes what it gets to a file, as it did for Mailroom's messages.
  const dump = tempDir('sink')
  const sink = await startSink(join(dump, 'dump'))
  const pf = await startPostfix(sink.port)
  try {
    const t0 = performance.now()
    await smtpSource(pf.port, n, { bytes, reuse: true })
    const deadline = Date.now() + 10 * 60_000
    while ((pf.relayed() < n || pf.queued() > 0) && Date.now() < deadline) await Bun.sleep(100)
    const seconds = (performance.now() - t0) / 1000
    return { perSecond: pf.relayed() / seconds, relayed: pf.relayed(), seconds }
  } finally {
    await pf.close()
    await sink.close()
    rmSync(dump, { recursive: true, force: true })
  }
}

/**
 * Postfix receiving the inbound load (the same smtp-source arguments Mailroom gets):
 * each message written to its queue and fsynced before the 250, as Postfix does, then
 * relayed on to the sink. The rate is of acceptance (smtp-source's run), as Mailroom's is.
 */
export async function postfixInbound(n: number, reuse: boolean, sessions = 20) {
  const sink = await startSink()
  const pf = await startPostfix(sink.port)
  try {
    const seconds = await smtpSource(pf.port, n, { bytes: 5120, reuse, sessions, from: 'sender@elsewhere.test', to: 'inbox@inbound.test' })
    const deadline = Date.now() + 5 * 60_000
    while (pf.queued() > 0 && Date.now() < deadline) await Bun.sleep(100)
    return { perSecond: n / seconds, accepted: n, relayed: pf.relayed() }
  } finally {
    await pf.close()
    await sink.close()
  }
}
