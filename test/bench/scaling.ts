// Cost as work grows: one database seeded straight into the service's own tables and
// indexes to each size in turn (10 thousand, 1 million, 10 million stored emails by
// default), and at each size the server started on it and timed: sends at 50
// connections and the reads of lists and metrics with one connection.
import Libsql from 'libsql'
import { closeSync, fsyncSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { EmailEventType } from '../../src/db/tables'
import { DAY, HOUR } from '../../src/lib/clock'
import { api, BUN, KEY, ROOT, sendScript, startMailroom, stop, tempDir, wrk, type WrkResult } from './lib'

/** The largest size sets the pace: its emails span the year before now, so every size holds the most recent ones at the same rate. */
const GAP_MS = (365 * DAY) / 10_000_000
/** Emails a transaction: its scratch tables of draws and events stay in memory. */
const EMAILS_PER_TRANSACTION = 200_000
const DOMAINS = ['acme.test', 'news.acme.test', 'billing.acme.test']
const CATEGORIES = ['welcome', 'receipt', 'reset', 'digest']
const TAGS = CATEGORIES.map((value) => JSON.stringify([{ name: 'category', value }]))
const BODY = 'Hello from the benchmark. '.repeat(8)
/** The tables the seed writes in bulk: their secondary indexes are built after each size's rows. */
const BULK_TABLES = ['emails', 'deliveries', 'email_events']
const P = 2_147_483_647

/**
 * Email k's draw number `salt`, uniform in [0, 1): a hash of k in SQL (a Lehmer step,
 * squared, and another step, modulo 2^31 - 1), so every table reads the same draws
 * and every run seeds the same year.
 */
const draw = (salt: number) => {
  const y = `((k * ${48_271 + 2 * salt * 7_919} + ${salt * 1_000_003 + 12_345}) % ${P})`
  return `((${y} * ${y} % ${P}) * 16807 % ${P} / ${P}.0)`
}
/** A UUIDv7 made at ms `at`, its other bits a bijection of `uniq`: unique and in time order, as the service's are. */
const uuid = (at: string, uniq: string) =>
  `printf('%08x-%04x-7%03x-%04x-%012x', (${at}) >> 16, (${at}) & 65535, ((${uniq}) * 40503) & 4095, 32768 | ((${uniq}) & 16383), ((${uniq}) * 2654435761) & 281474976710655)`
const iso = (ms: string) => `strftime('%Y-%m-%dT%H:%M:%S', (${ms}) / 1000, 'unixepoch') || printf('.%03dZ', (${ms}) % 1000)`

/**
 * One email's life as test/bench/metrics.ts's `lifeOf` draws it, as offsets from its
 * send (ms) and the slot that keeps its event id apart: sent; a delay for 3%; a bounce
 * for 5% (70% of them permanent), or else delivered, opens an hour apart (each next
 * one at 45%), a click for 15%, a complaint for 0.4%, an unsubscribe for 1%. Ranks
 * are `lifeOf`'s order, which breaks ties for the last event.
 */
const LIFE: { type: EmailEventType; offset: number; when: string; rank: number; slot: number }[] = [
  { type: 'sent', offset: 0, when: '1', rank: 0, slot: 0 },
  { type: 'delivery_delayed', offset: 60_000, when: 'delayed', rank: 1, slot: 1 },
  { type: 'bounced', offset: 120_000, when: 'bounced', rank: 2, slot: 2 },
  { type: 'delivered', offset: 2000, when: 'not bounced', rank: 3, slot: 3 },
  { type: 'clicked', offset: 2 * HOUR, when: 'not bounced and clicked', rank: 5, slot: 4 },
  { type: 'complained', offset: 3 * HOUR, when: 'not bounced and complained', rank: 6, slot: 5 },
  { type: 'unsubscribed', offset: 4 * HOUR, when: 'not bounced and unsubscribed', rank: 7, slot: 6 },
]
/** Opens take slots 8 and on, so an email holds at most this many. */
const MAX_OPENS = 24

/**
 * A data folder with the service's schema, its first account and key, made by the
 * service in a process of its own: its connections hold the file until their
 * statements are collected, and the seed's journal mode needs the file alone.
 */
function firstAccount(dir: string): { accountId: string; keyId: string } {
  const code = `import { ensureFirstAccount } from './src/accounts/service'
    import { openRoot } from './src/boot'
    import { loadConfig } from './src/config'
    const root = await openRoot(loadConfig({ MAILROOM_DATA_DIR: ${JSON.stringify(dir)}, MAILROOM_BOOTSTRAP_KEY: '${KEY}' }), { log: { info() {}, error() {} } })
    const { accountId } = await ensureFirstAccount(root)
    const [{ id }] = await root.db.execute('select id from api_keys limit 1')
    console.log(JSON.stringify({ accountId, keyId: id }))`
  const p = Bun.spawnSync([BUN, '-e', code], { cwd: ROOT })
  if (p.exitCode !== 0) throw new Error(`the first account was not made: ${p.stderr.toString()}`)
  return JSON.parse(p.stdout.toString())
}

/**
 * A database that grows: `growTo(n)` adds emails further back in time until it holds
 * n, each a transactional send with its delivery row and its events, and adds them to
 * the metric rollups as `rollUp` would. Rows are made inside SQLite (INSERT … SELECT
 * over generate_series, draws hashed from the email's number) rather than bound from
 * JavaScript, and the three big tables' secondary indexes are dropped for the load and
 * built again after it from their own CREATE statements.
 */
function seeder(dir: string, now: number) {
  const { accountId, keyId } = firstAccount(dir)
  const keys = [keyId, null, crypto.randomUUID(), crypto.randomUUID()]
  const domainIds = DOMAINS.map(() => crypto.randomUUID())
  const file = join(dir, 'mailroom.db')
  const schema = (db: Libsql.Database) => JSON.stringify(db.prepare('select type, name, tbl_name, sql from sqlite_master order by name').all())
  let stored = 0
  let events = 0

  /** Emails number k = from..to-1 back from now, in one transaction. */
  function chunk(db: Libsql.Database, from: number, to: number) {
    const whenEvent = (offset: string, when: string) => `(${when}) and at + ${offset} <= ${now}`
    const last = `max(${LIFE.map((e) => `case when ${whenEvent(String(e.offset), e.when)} then ${e.offset * 8 + e.rank} else -1 end`).join(', ')},
      case when ${whenEvent(`opens * ${HOUR}`, 'not bounced and opens > 0')} then opens * ${HOUR * 8} + 4 else -1 end)`
    db.exec('BEGIN')
    db.exec(`create temp table d (k integer primary key, at integer, id text, rcpt text, key_i integer, dom_i integer, sim integer, delayed integer, bounced integer, permanent integer, opens integer, clicked integer, complained integer, unsubscribed integer, last integer)`)
    db.exec(`insert into d select k, at, ${uuid('at', 'k * 64 + 32')}, 'user' || (k % 200000) || '@customer' || (k % 50) || '.test', key_i, dom_i, sim, delayed, bounced, permanent, opens, clicked, complained, unsubscribed, ${last}
      from (select k, at, cast(${draw(1)} * ${keys.length} as integer) as key_i, cast(${draw(2)} * ${DOMAINS.length} as integer) as dom_i, ${draw(3)} < 0.05 as sim,
        ${draw(4)} < 0.03 as delayed, ${draw(5)} < 0.05 as bounced, ${draw(6)} < 0.7 as permanent, min(${MAX_OPENS}, cast(ln(1 - ${draw(7)}) / ln(0.45) as integer)) as opens,
        ${draw(8)} < 0.15 as clicked, ${draw(9)} < 0.004 as complained, ${draw(10)} < 0.01 as unsubscribed
        from (select value as k, ${now} - cast(value * ${GAP_MS} as integer) as at from generate_series(${from}, ${to - 1})))`)
    const lastEvent = `case last % 8 ${LIFE.map((e) => `when ${e.rank} then '${e.type}'`).join(' ')} else 'opened' end`
    db.exec(`insert into emails (id, account_id, api_key_id, domain_id, "from", from_email, "to", cc, bcc, reply_to, subject, text, headers, tags, message_id, priority, simulator, open_tracking, click_tracking, last_event, created_at, updated_at)
      select d.id, '${accountId}', keys.id, case when sim then null else doms.id end, 'hello@' || doms.name, 'hello@' || doms.name, json_array(rcpt), '[]', '[]', '[]', 'Hello', '${BODY}', '{}', tags.value,
        d.id || '@bench.local', 'transactional', sim, 0, 0, ${lastEvent}, ${iso('at')}, ${iso('at + last / 8')}
      from d join doms on doms.i = dom_i join keys on keys.i = key_i join tags on tags.i = k % ${TAGS.length} order by k desc`)
    // The tag filter's index rows, as the send path writes them: each distinct name:value, and each distinct name with value ''.
    db.exec(`insert into email_tags (account_id, name, value, email_id)
      select distinct '${accountId}', json_extract(j.value, '$.name'), iif(w.whole, json_extract(j.value, '$.value'), ''), d.id
      from d join tags on tags.i = d.k % ${TAGS.length}, json_each(tags.value) j, (select 1 as whole union all select 0 as whole) w`)
    db.exec(`insert into deliveries (id, email_id, account_id, recipient, recipient_domain, kind, state, priority, next_attempt_at, attempts, last_code, last_response, created_at, updated_at)
      select ${uuid('at', 'k * 64 + 33')}, id, '${accountId}', rcpt, substr(rcpt, instr(rcpt, '@') + 1), 'to', iif(b, 'bounced', 'delivered'), 0, ${iso('at')}, 1, iif(b, 550, 250),
        iif(b, '550 5.1.1 unknown user', '250 2.0.0 ok'), ${iso('at')}, ${iso('at + 2000')}
      from (select *, bounced and at + 120000 <= ${now} as b from d) order by k desc`)
    db.exec('create temp table ev (k integer, slot integer, type text, t integer, data text, email_id text, rcpt text, sim integer, dom_i integer, key_i integer, permanent integer)')
    const carried = 'id, rcpt, sim, dom_i, key_i, permanent'
    db.exec(`insert into ev ${LIFE.map((e) => `select k, ${e.slot}, '${e.type}', at + ${e.offset}, ${e.type === 'bounced' ? `iif(permanent, '{"bounce":{"type":"Permanent"}}', '{"bounce":{"type":"Transient"}}')` : `'{}'`}, ${carried} from d where ${whenEvent(String(e.offset), e.when)}`).join(' union all ')}
      union all select k, 7 + g.value, 'opened', at + g.value * ${HOUR}, '{}', ${carried} from d, generate_series(1, d.opens) g where not bounced and opens > 0 and at + g.value * ${HOUR} <= ${now}`)
    db.exec(`insert into email_events (id, account_id, email_id, type, recipient, data, created_at) select ${uuid('t', 'k * 64 + slot')}, '${accountId}', email_id, type, rcpt, data, ${iso('t')} from ev`)
    // The rollups in `rollUp`'s shape: each event under its series at three levels of detail and its bucket at three grains.
    const counters = ['sent', 'delivered', 'delivery_delayed', 'bounced', 'bounced_permanent', 'bounced_transient', 'opened', 'unique_opened', 'clicked', 'unique_clicked', 'complained', 'unsubscribed']
    db.exec(`create temp table q as select sim, dom_i, key_i, t / 900000 as quarter, sum(type = 'sent') as sent, sum(type = 'delivered') as delivered, sum(type = 'delivery_delayed') as delivery_delayed,
      sum(type = 'bounced') as bounced, sum(type = 'bounced' and permanent) as bounced_permanent, sum(type = 'bounced' and not permanent) as bounced_transient,
      sum(type = 'opened') as opened, sum(slot = 8) as unique_opened, sum(type = 'clicked') as clicked, sum(type = 'clicked') as unique_clicked,
      sum(type = 'complained') as complained, sum(type = 'unsubscribed') as unsubscribed from ev group by 1, 2, 3, 4`)
    const seriesKey = 'account_id, level, simulator, domain, domain_id, api_key_id, broadcast_id'
    db.exec(`insert into metric_series (${seriesKey}) select distinct '${accountId}', level, simulator, domain, domain_id, api_key_id, '' from q join dims using (sim, dom_i, key_i) where true on conflict do nothing`)
    db.exec(`insert into metric_counts (id, ${counters.join(', ')})
      select s.id * ${2 ** 31} + g.grain * ${2 ** 29} + quarter / g.quarters, ${counters.map((c) => `sum(q.${c})`).join(', ')}
      from q join dims using (sim, dom_i, key_i) join metric_series s on s.account_id = '${accountId}' and s.level = dims.level and s.simulator = dims.simulator and s.domain = dims.domain
        and s.domain_id = dims.domain_id and s.api_key_id = dims.api_key_id and s.broadcast_id = ''
      cross join (select 0 as grain, 1 as quarters union all select 1, 4 union all select 2, 96) g
      where true group by 1 on conflict (id) do update set ${counters.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`)
    const [{ n }] = db.prepare('select count(*) as n from ev').all() as { n: number }[]
    db.exec('drop table d; drop table ev; drop table q')
    db.exec('COMMIT')
    stored += to - from
    events += n
  }

  return {
    /** Grows to `n` emails, or as far as it gets before `deadline` (ms since the epoch). */
    growTo(n: number, deadline: number) {
      const t0 = performance.now()
      const before = { stored, events }
      const db = new Libsql(file, { timeout: 10_000 } as never)
      try {
        // A seed, not a send: what a crash would lose is rerun, so it skips the journal and the fsyncs.
        db.exec('PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -2000000; PRAGMA temp_store = MEMORY')
        const schemaBefore = schema(db)
        const indexes = db.prepare(`select name, sql from sqlite_master where type = 'index' and sql is not null and tbl_name in (${BULK_TABLES.map((t) => `'${t}'`).join(', ')})`).all() as { name: string; sql: string }[]
        for (const i of indexes) db.exec(`drop index "${i.name}"`)
        db.exec(`create temp table doms (i integer primary key, name text, id text); create temp table keys (i integer primary key, id text); create temp table tags (i integer primary key, value text)`)
        const insert = (table: string, rows: unknown[][]) => rows.forEach((r) => db.prepare(`insert into ${table} values (${r.map(() => '?').join(', ')})`).run(r))
        insert('doms', DOMAINS.map((name, i) => [i, name, domainIds[i]]))
        insert('keys', keys.map((id, i) => [i, id]))
        insert('tags', TAGS.map((value, i) => [i, value]))
        // What each level of detail keeps of an email's dimensions, as rollUp's LEVELS: the simulator flag; all but the broadcast; all but the key (no broadcasts here).
        db.exec(`create temp table dims as select s.sim, doms.i as dom_i, keys.i as key_i, l.level, s.sim as simulator, iif(l.level = 0, '', doms.name) as domain,
          iif(l.level = 0 or s.sim, '', doms.id) as domain_id, iif(l.level = 1, coalesce(keys.id, ''), '') as api_key_id
          from (select 0 as sim union all select 1) s, doms, keys, (select 0 as level union all select 1 union all select 2) l`)
        while (stored < n && Date.now() < deadline) chunk(db, stored, Math.min(n, stored + EMAILS_PER_TRANSACTION))
        db.exec('drop table doms; drop table keys; drop table tags; drop table dims; PRAGMA temp_store = DEFAULT; PRAGMA threads = 2')
        for (const i of indexes) db.exec(i.sql)
        if (schema(db) !== schemaBefore) throw new Error('the seed left a schema other than the migrations made')
        db.exec('PRAGMA journal_mode = WAL')
      } finally {
        db.close()
      }
      const seconds = (performance.now() - t0) / 1000
      // The seed skipped the fsyncs, leaving gigabytes for the kernel to write back: a server started now would wait behind them at each commit's fsync.
      const flushed = performance.now()
      const fd = openSync(file, 'r+')
      fsyncSync(fd)
      closeSync(fd)
      const flushSeconds = (performance.now() - flushed) / 1000
      return { stored, events, seconds, flushSeconds, emailsPerSecond: (stored - before.stored) / seconds, eventsPerSecond: (events - before.events) / seconds }
    },
  }
}

export interface ScaleStep {
  emails: number
  events: number
  seedSeconds: number
  seedEmailsPerSecond: number
  /** The seed deadline came before the size asked for. */
  short: boolean
  sends: WrkResult
  reads: { name: string; r: WrkResult }[]
}

/**
 * Holds the shared bench lock (flock on `path`) until the returned function is
 * called, so only the timed phases wait for other people's measurements and the
 * seeding does not; no path, no lock.
 */
async function benchLock(path: string | undefined) {
  if (!path) return async () => {}
  const p = Bun.spawn(['flock', path, 'sh', '-c', 'echo held; exec cat'], { stdin: 'pipe', stdout: 'pipe' })
  await p.stdout.getReader().read()
  return async () => {
    p.stdin.end()
    await p.exited
  }
}

/**
 * `sizes` in stored emails; the seeding of them all stops at `seedMinutes` and the
 * size reached is measured. One server per size, started on the grown database once
 * the seed's writes are on disk; `lock` is the bench lock its timed phase holds.
 */
export async function scaling(sizes: number[], seconds: number, seedMinutes: number, progress: (line: string) => void = () => {}, lock = process.env.BENCH_LOCK): Promise<ScaleStep[]> {
  const dir = tempDir('scaling')
  const now = Date.now()
  const deadline = now + seedMinutes * 60_000
  const out: ScaleStep[] = []
  try {
    const seed = seeder(dir, now)
    for (const size of sizes) {
      const s = await seed.growTo(size, deadline)
      progress(`seeded ${s.stored} emails, ${s.events} events in ${s.seconds.toFixed(0)} s (${s.emailsPerSecond.toFixed(0)} emails/s), written back to disk in ${s.flushSeconds.toFixed(1)} s`)
      const release = await benchLock(lock)
      try {
        const m = await measure(dir, seconds)
        // Each size's figures as they come: a later size that fails leaves the earlier ones.
        progress(`at ${s.stored}: sends ${m.sends.requestsPerSec.toFixed(0)}/s p99 ${m.sends.p99ms} ms; ${m.reads.map((q) => `${q.name} p50 ${q.r.p50ms} p99 ${q.r.p99ms} ms`).join('; ')}; load ${loadavg()[0].toFixed(1)}`)
        out.push({ emails: s.stored, events: s.events, seedSeconds: s.seconds, seedEmailsPerSecond: s.emailsPerSecond, short: s.stored < size, ...m })
      } finally {
        await release()
      }
      if (s.stored < size) break
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return out
}

/**
 * Filters no stored email matches: the worst case of a filter, which finds nothing
 * unless its index leads (before the indexes, 0.6-1.2 s a request at a million emails).
 */
const RARE_FILTERS: [string, string][] = [
  ['GET /emails?limit=20&to=<an address never sent to>', '/emails?limit=20&to=nobody%40nowhere.test'],
  ['GET /emails?limit=20&from=<an address never sent from>', '/emails?limit=20&from=nobody%40nowhere.test'],
  ['GET /emails?limit=20&tag=<a tag never used>', '/emails?limit=20&tag=category:none'],
]

async function measure(dir: string, seconds: number) {
  // The seeded sender bounces 5% to unknown users and draws 0.4% complaints, over the trust rules' lines: its key would be paused and its
  // account held mid-run. The rules still read the rates on their schedule (that cost is measured); with these minimums they judge no one.
  const m = await startMailroom({ MAILROOM_DELIVERY: 'capture', MAILROOM_KILL_SWITCH_MIN_SENDS: '1000000', MAILROOM_TRUST_MIN_SENDS: '1000000' }, dir)
  try {
    const script = join(dir, 'auth.lua')
    writeFileSync(script, `wrk.headers["Authorization"] = "Bearer ${KEY}"\n`)
    const listed = await api(m.url, 'GET', '/emails?limit=20')
    if (listed.status !== 200) throw new Error(`GET /emails?limit=20 answered ${listed.status}: ${await listed.text()}`)
    const first = (await listed.json()) as { data: { id: string }[]; next_cursor: string }
    const paths: [string, string][] = [
      ['GET /emails?limit=20', '/emails?limit=20'],
      ['GET /emails?limit=20&status=bounced', '/emails?limit=20&status=bounced'],
      ['GET /emails?limit=20&tag=category:receipt', '/emails?limit=20&tag=category:receipt'],
      ['GET /emails?limit=20, the second page by cursor', `/emails?limit=20&cursor=${encodeURIComponent(first.next_cursor)}`],
      ['GET /emails/{id}', `/emails/${first.data[10].id}`],
      ['GET /metrics', '/metrics'],
      ['GET /emails/metrics', '/emails/metrics'],
      ...RARE_FILTERS,
    ]
    for (const [, path] of paths) {
      const check = await api(m.url, 'GET', path)
      if (check.status !== 200) throw new Error(`${path} answered ${check.status}: ${await check.text()}`)
    }
    // Warmed first, so the first figure is not the one that pays for the compiler and the page cache.
    for (let i = 0; i < 50; i++) for (const [, path] of paths) await (await api(m.url, 'GET', path)).arrayBuffer()
    const reads: ScaleStep['reads'] = []
    for (const [name, path] of paths) {
      reads.push({ name, r: await wrk(m.url + path, { connections: 1, threads: 1, seconds, script }) })
    }
    // Tagged like the stored emails, so the next size's tag filter finds matches as densely as the seed made them.
    const sends = await wrk(`${m.url}/emails`, { seconds, script: sendScript(dir, CATEGORIES) })
    const failed = [...reads, { name: 'POST /emails', r: sends }].filter((q) => q.r.non2xx > 0)
    if (failed.length) throw new Error(`error answers, so no figures: ${failed.map((q) => `${q.name} ${q.r.non2xx}`).join(', ')}`)
    return { sends, reads }
  } finally {
    await stop(m.p)
  }
}

if (import.meta.main) {
  const sizes = (process.env.BENCH_SCALE_SIZES ?? '10000,100000').split(',').map(Number)
  for (const s of await scaling(sizes, Number(process.env.BENCH_SECONDS ?? 3), Number(process.env.BENCH_SCALE_SEED_MINUTES ?? 15), console.log)) {
    console.log(s.emails, s.events, `seed ${s.seedSeconds.toFixed(1)} s`, `sends ${s.sends.requestsPerSec.toFixed(0)}/s p99 ${s.sends.p99ms} ms`)
    for (const q of s.reads) console.log(`  ${q.name}: p50 ${q.r.p50ms} ms p99 ${q.r.p99ms} ms`)
  }
}
