// A broadcast to a large segment on a running Mailroom (`bun src/index.ts`): the
// contacts and their static membership are written straight into its database, then
// POST /broadcasts with `send: true`. Figures: the reply (recipients counted), the
// time until every email is enqueued (the broadcast leaves `queued`), the server's
// peak memory, and wrk's p50/p99 for transactional sends (POST /emails) alone and
// while the fan-out runs. The bulk mail is delivered at the same time, as it would
// be: to real addresses, DKIM-signed into Postfix's smtp-sink through relay mode
// (`sink`), or to simulator addresses, which cost delivery almost nothing, so the
// figure is the fan-out's own (`simulator`).
import { createClient } from '@libsql/client'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { api, has, insertVerifiedDomain, memoryMb, sendScript, startMailroom, startSink, stop, wrk, type WrkResult } from './lib'

/** Rows per insert: 9 values each stays under SQLite's 32,766 bound values. */
const ROWS_PER_WRITE = 2000

export type Recipients = 'sink' | 'simulator'

export interface BroadcastFigures {
  contacts: number
  recipients: Recipients
  recipientCount: number
  /** POST /broadcasts with send: true, recipients counted. */
  replyMs: number
  /** From the request until every email is enqueued. */
  enqueueSeconds: number
  rssBeforeMb: number
  rssAfterMb: number
  alone: WrkResult
  during: WrkResult
}

/** `sink` needs Postfix's smtp-sink. */
export async function broadcastFanout(n: number, seconds: number, recipients: Recipients): Promise<BroadcastFigures> {
  const sink = recipients === 'sink' ? await startSink() : null
  const env: Record<string, string> = { MAILROOM_DELIVERY: 'capture', MAILROOM_APPROVAL_THRESHOLD: '0' }
  if (sink) Object.assign(env, { MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: `smtp://127.0.0.1:${sink.port}` })
  const m = await startMailroom(env)
  try {
    const db = createClient({ url: `file:${join(m.dir, 'mailroom.db')}` })
    await db.execute('PRAGMA busy_timeout = 10000')
    const account = await insertVerifiedDomain(db, 'bench.test')
    const segment = await api(m.url, 'POST', '/segments', { name: 'Everyone' })
    if (segment.status !== 201) throw new Error(`POST /segments answered ${segment.status}: ${await segment.text()}`)
    const segmentId = ((await segment.json()) as { id: string }).id
    const now = new Date().toISOString()
    for (let from = 0; from < n; from += ROWS_PER_WRITE) {
      const ids = Array.from({ length: Math.min(ROWS_PER_WRITE, n - from) }, (_, k) => ({ id: crypto.randomUUID(), i: from + k }))
      const values = (cols: number) => ids.map(() => `(${Array(cols).fill('?').join(', ')})`).join(', ')
      await db.batch(
        [
          {
            sql: `insert into contacts (id, account_id, email, first_name, last_name, unsubscribed, properties, created_at, updated_at) values ${values(9)}`,
            args: ids.flatMap(({ id, i }) => [id, account, recipients === 'sink' ? `user${i}@sink.test` : `delivered+user${i}@simulator.test`, i % 3 ? `User ${i}` : null, null, 0, '{}', now, now]),
          },
          { sql: `insert into segment_contacts (segment_id, contact_id, account_id, created_at) values ${values(4)}`, args: ids.flatMap(({ id }) => [segmentId, id, account, now]) },
        ],
        'write',
      )
    }
    db.close()

    const script = sendScript(m.dir)
    const alone = await wrk(`${m.url}/emails`, { seconds, script })
    const rssBeforeMb = memoryMb(m.p.pid).peak
    const t0 = performance.now()
    const sent = await api(m.url, 'POST', '/broadcasts', {
      segment_id: segmentId,
      from: 'Bench <news@bench.test>',
      subject: 'News for {{{FIRST_NAME|you}}}',
      html: `<p>Hello {{{FIRST_NAME|there}}},</p><p>${'The news of the month. '.repeat(20)}</p><p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a></p>`,
      send: true,
    })
    const replyMs = performance.now() - t0
    if (sent.status !== 201) throw new Error(`POST /broadcasts answered ${sent.status}: ${await sent.text()}`)
    const broadcast = (await sent.json()) as { id: string; recipient_count: number }
    const enqueued = (async () => {
      for (;;) {
        const got = (await (await api(m.url, 'GET', `/broadcasts/${broadcast.id}`)).json()) as { status: string }
        if (got.status !== 'queued') return (performance.now() - t0) / 1000
        await Bun.sleep(50)
      }
    })()
    const during = await wrk(`${m.url}/emails`, { seconds, script })
    const enqueueSeconds = await enqueued
    return { contacts: n, recipients, recipientCount: broadcast.recipient_count, replyMs, enqueueSeconds, rssBeforeMb, rssAfterMb: memoryMb(m.p.pid).peak, alone, during }
  } finally {
    await stop(m.p)
    await sink?.close()
    // A hundred thousand emails and their outbox rows: a few hundred MB not worth keeping.
    rmSync(m.dir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  for (const r of has('smtp-sink') ? (['simulator', 'sink'] as const) : (['simulator'] as const)) {
    console.log(JSON.stringify(await broadcastFanout(Number(process.env.BENCH_CONTACTS ?? 100_000), Number(process.env.BENCH_SECONDS ?? 5), r), null, 2))
  }
}
