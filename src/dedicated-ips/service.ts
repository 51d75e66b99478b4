import { and, eq, inArray, or } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import { pageOf } from '../db/paging'
import { dedicatedIpDomains, dedicatedIps, domains } from '../db/tables'
import type { Deps } from '../deps'
import { dnsClient } from '../domains/dns'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { UUID_RE } from '../lib/ids'
import { listKey, type PageQuery } from '../lib/paging'
import { requireRole } from '../team/roles'
import { canonicalIp, familyOf, isHostAddress, reverseName } from './address'
import type { RegisterDedicatedIp, UpdateDedicatedIp } from './schema'
import { sentToday, warmupOf, WARMUP_SCHEDULE, type DedicatedIpRow } from './warmup'

type DomainRef = { id: string; name: string }

/** The reverse DNS name of an address through the configured resolvers; null when there is none or DNS does not answer. */
export async function lookupPtr(deps: Pick<Deps, 'config'>, ip: string): Promise<string | null> {
  const l = await dnsClient(deps.config.dnsServers, { timeoutMs: 1000, tries: 1 }).ptr(reverseName(ip))
  return l.kind === 'found' && l.values.length ? l.values[0]! : null
}

/** The account's domains pinned by the operator to `ip`. */
async function pinnedTo(deps: Deps, accountId: string, ip: string): Promise<DomainRef[]> {
  const names = [...deps.config.deliverability.pins].filter(([, pin]) => pin === ip).map(([name]) => name)
  if (!names.length) return []
  return deps.db.q
    .select({ id: domains.id, name: domains.name })
    .from(domains)
    .where(and(eq(domains.accountId, accountId), inArray(domains.name, names)))
}

/** The public shape of a page of rows: their domains (assigned and pinned) and today's volume, read once for all. */
async function describe(deps: Deps, accountId: string, rows: DedicatedIpRow[]) {
  const now = deps.clock.now()
  const ids = rows.map((r) => r.id)
  const [assigned, sent] = await Promise.all([
    ids.length
      ? deps.db.q
          .select({ ipId: dedicatedIpDomains.ipId, id: domains.id, name: domains.name })
          .from(dedicatedIpDomains)
          .innerJoin(domains, eq(domains.id, dedicatedIpDomains.domainId))
          .where(inArray(dedicatedIpDomains.ipId, ids))
      : [],
    sentToday(deps.db.q, ids, now),
  ])
  const pins = deps.config.deliverability.pins
  return Promise.all(
    rows.map(async (row) => {
      const w = warmupOf(row, now)
      const used = sent.get(row.id) ?? 0
      const pinned = await pinnedTo(deps, accountId, row.ip)
      const own = assigned.filter((a) => a.ipId === row.id && !pins.has(a.name))
      return {
        object: 'dedicated_ip' as const,
        id: row.id,
        ip: row.ip,
        family: row.family as 4 | 6,
        ptr: row.ptr,
        warmup: {
          enabled: w.limit !== null,
          started_at: row.warmupStartedAt,
          day: w.day,
          daily_limit: w.limit,
          sent_today: used,
          remaining_today: w.limit === null ? null : Math.max(0, w.limit - used),
          completes_at: w.completesAt === null ? null : iso(w.completesAt),
          schedule: [...WARMUP_SCHEDULE],
        },
        overflow: row.overflow,
        domains: [
          ...pinned.map((d) => ({ id: d.id, name: d.name, assigned_by: 'operator' as const })),
          ...own.map((d) => ({ id: d.id, name: d.name, assigned_by: 'account' as const })),
        ].sort((a, b) => a.name.localeCompare(b.name)),
        created_at: row.createdAt,
        updated_at: row.updatedAt,
      }
    }),
  )
}

const describeOne = async (deps: Deps, accountId: string, row: DedicatedIpRow) => (await describe(deps, accountId, [row]))[0]!

async function findIp(deps: Deps, actor: Actor, id: string): Promise<DedicatedIpRow> {
  const [row] = await deps.db.q
    .select()
    .from(dedicatedIps)
    .where(and(eq(dedicatedIps.id, id.toLowerCase()), eq(dedicatedIps.accountId, actor.accountId)))
  if (!row) throw notFound(`Dedicated IP ${id}`)
  return row
}

/**
 * Registers an address of this host as the account's outbound source address,
 * recording its reverse DNS name. A person decides this (an address is a
 * reputation the account will own); owners and admins only.
 */
export async function registerIp(deps: Deps, actor: Actor, input: RegisterDedicatedIp) {
  requireRole(actor, 'admin', 'register a dedicated IP')
  const ip = canonicalIp(input.ip)
  if (!ip) throw new AppError('invalid_parameter', { message: `\`ip\` must be an IPv4 or IPv6 address such as 203.0.113.7 or 2001:db8::7; got "${input.ip}".`, details: [{ field: 'ip', message: 'not an IP address' }] })
  if (!isHostAddress(ip)) {
    throw new AppError('invalid_parameter', {
      message: `${ip} is not an address of this host, so mail cannot leave from it. Add it to one of the host's network interfaces first (for example \`ip addr add ${ip}/32 dev eth0\`), then register it.`,
      details: [{ field: 'ip', message: 'not an address of this host' }],
    })
  }
  const now = iso(deps.clock.now())
  const row: DedicatedIpRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    ip,
    family: familyOf(ip),
    ptr: await lookupPtr(deps, ip),
    warmupStartedAt: input.warmup === false ? null : now,
    overflow: input.overflow ?? 'shared',
    createdAt: now,
    updatedAt: now,
  }
  await deps.db.write(async (tx) => {
    const [taken] = await tx.select({ id: dedicatedIps.id, accountId: dedicatedIps.accountId }).from(dedicatedIps).where(eq(dedicatedIps.ip, ip))
    if (taken) {
      throw new AppError('dedicated_ip_taken', {
        message: taken.accountId === actor.accountId ? `${ip} is already registered on this account (${taken.id}).` : `${ip} is already dedicated to another account of this host.`,
      })
    }
    await tx.insert(dedicatedIps).values(row)
  })
  const out = await describeOne(deps, actor.accountId, row)
  await recordChange(deps, actor, { resource: 'dedicated_ip', resourceId: row.id, action: 'created', before: null, after: out })
  return out
}

export async function listIps(deps: Deps, actor: Actor, q: PageQuery) {
  const page = await pageOf(
    deps.secret,
    { list: listKey('dedicated-ips'), query: q, id: dedicatedIps.id },
    (ks) => deps.db.q.select().from(dedicatedIps).where(and(eq(dedicatedIps.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    (r) => r,
  )
  return { ...page, data: await describe(deps, actor.accountId, page.data) }
}

export async function getIp(deps: Deps, actor: Actor, id: string) {
  return describeOne(deps, actor.accountId, await findIp(deps, actor, id))
}

/** The account's domains named by id or name, in the order given; an unknown one is refused by its position. */
async function domainsNamed(deps: Deps, actor: Actor, refs: string[]): Promise<DomainRef[]> {
  const wanted = refs.map((r) => r.trim().replace(/\.$/, '').toLowerCase())
  const ids = wanted.filter((r) => UUID_RE.test(r))
  const names = wanted.filter((r) => !UUID_RE.test(r))
  const found = wanted.length
    ? await deps.db.q
        .select({ id: domains.id, name: domains.name })
        .from(domains)
        .where(and(eq(domains.accountId, actor.accountId), or(ids.length ? inArray(domains.id, ids) : undefined, names.length ? inArray(domains.name, names) : undefined)))
    : []
  const out = new Map<string, DomainRef>()
  wanted.forEach((w, i) => {
    const d = found.find((f) => f.id === w || f.name === w)
    if (!d) throw new AppError('invalid_parameter', { message: `\`domains[${i}]\` (${refs[i]}) is not a domain of this account; add it with POST /domains first.`, details: [{ field: `domains[${i}]`, message: 'unknown domain' }] })
    out.set(d.id, d)
  })
  return [...out.values()]
}

/**
 * Assigns domains (replacing the list), turns warm-up on or off and sets the
 * overflow rule. Domains the operator pinned cannot be moved here, nor off the
 * address they are pinned to.
 */
export async function updateIp(deps: Deps, actor: Actor, id: string, input: UpdateDedicatedIp) {
  const row = await findIp(deps, actor, id)
  const before = await describeOne(deps, actor.accountId, row)
  const pins = deps.config.deliverability.pins
  const patch: Partial<DedicatedIpRow> = { updatedAt: iso(deps.clock.now()) }
  if (input.warmup === true && !row.warmupStartedAt) patch.warmupStartedAt = patch.updatedAt
  if (input.warmup === false) patch.warmupStartedAt = null
  if (input.overflow !== undefined) patch.overflow = input.overflow
  let assign: DomainRef[] | null = null
  if (input.domains !== undefined) {
    const wanted = await domainsNamed(deps, actor, input.domains)
    const elsewhere = wanted.find((d) => pins.has(d.name) && pins.get(d.name) !== row.ip)
    if (elsewhere) {
      throw new AppError('dedicated_ip_assigned_by_us', { message: `${elsewhere.name} is pinned by the operator to ${pins.get(elsewhere.name)}; it cannot be assigned to ${row.ip}. Ask the operator to change MAILROOM_DEDICATED_IP_PINS.` })
    }
    const dropped = before.domains.find((d) => d.assigned_by === 'operator' && !wanted.some((w) => w.id === d.id))
    if (dropped) {
      throw new AppError('dedicated_ip_assigned_by_us', { message: `${dropped.name} is pinned by the operator to ${row.ip}; keep it in \`domains\`. Ask the operator to change MAILROOM_DEDICATED_IP_PINS to move it.` })
    }
    assign = wanted.filter((d) => !pins.has(d.name))
  }
  await deps.db.write(async (tx) => {
    await tx.update(dedicatedIps).set(patch).where(eq(dedicatedIps.id, row.id))
    if (!assign) return
    await tx.delete(dedicatedIpDomains).where(eq(dedicatedIpDomains.ipId, row.id))
    if (!assign.length) return
    // A domain sends from one address: assigning it here moves it off any other.
    await tx.delete(dedicatedIpDomains).where(inArray(dedicatedIpDomains.domainId, assign.map((d) => d.id)))
    await tx.insert(dedicatedIpDomains).values(assign.map((d) => ({ domainId: d.id, ipId: row.id, accountId: actor.accountId, createdAt: patch.updatedAt! })))
  })
  const after = await describeOne(deps, actor.accountId, { ...row, ...patch })
  await recordChange(deps, actor, { resource: 'dedicated_ip', resourceId: row.id, action: 'updated', before, after })
  return after
}
