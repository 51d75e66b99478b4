import { and, asc, count, eq, isNotNull, isNull, lte, ne, or, sql } from 'drizzle-orm'
import { domainToASCII } from 'node:url'
import { recordChange, recordChangeIn } from '../audit/record'
import type { Tx } from '../db'
import { pageOf } from '../db/paging'
import { domains } from '../db/tables'
import type { Deps, RootDeps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import { systemActor, type Actor } from '../lib/actor'
import { DAY, HOUR, iso } from '../lib/clock'
import { listKey, type PageQuery } from '../lib/paging'
import { buildRecords, checkDomain, domainStatus, returnPathHost, trackingHost, trackingVerified, VERIFIED_RECHECK_HOURS, windowEndsAt, type CheckProblem, type DomainRow } from './checks'
import { assertClaimable, assertNotBlocklisted } from '../deliverability/gate'
import { generateDkimKey } from './dkim'
import type { CreateDomain, DnsRecord, UpdateDomain } from './schema'

export type { DomainRow } from './checks'
export { checkDomain, trackingVerified } from './checks'

/** After a window closed this long ago, verify reopens it only when asked to (`reopen: true`). */
export const REOPEN_GRACE_DAYS = 7

const HOST_RE = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])$/
const LABEL_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

/** Resend's region names are read as ours. */
const REGIONS: Record<string, 'us' | 'eu'> = { us: 'us', eu: 'eu', 'us-east-1': 'us', 'sa-east-1': 'us', 'ap-northeast-1': 'us', 'eu-west-1': 'eu' }

/** Mailbox providers' own domains: nobody but the provider can publish their DNS. */
const PROVIDER_DOMAINS = new Set([
  'gmail.com', 'googlemail.com', 'google.com', 'outlook.com', 'hotmail.com', 'live.com', 'msn.com', 'passport.com',
  'yahoo.com', 'ymail.com', 'rocketmail.com', 'aol.com', 'aim.com', 'icloud.com', 'me.com', 'mac.com',
  'proton.me', 'protonmail.com', 'protonmail.ch', 'pm.me', 'mail.ru', 'inbox.ru', 'list.ru', 'bk.ru', 'ya.ru',
  'qq.com', 'foxmail.com', '163.com', '126.com', 'yeah.net', 'sina.com', 'sina.cn', 'sohu.com', 'aliyun.com',
  'naver.com', 'daum.net', 'hanmail.net', 'zoho.com', 'zohomail.com', 'fastmail.com', 'tutanota.com', 'tuta.io',
  'web.de', 't-online.de', 'freenet.de', 'orange.fr', 'free.fr', 'laposte.net', 'sfr.fr', 'libero.it', 'virgilio.it',
  'seznam.cz', 'wp.pl', 'o2.pl', 'onet.pl', 'interia.pl', 'rediffmail.com', 'hey.com', 'mail.com', 'email.com',
  'att.net', 'comcast.net', 'verizon.net', 'btinternet.com', 'bigpond.com', 'rambler.ru', 'ukr.net',
])
/** Brands whose mail lives under many public suffixes: gmx.de, yandex.ru, yahoo.co.uk, hotmail.fr, outlook.es, live.co.uk… */
const PROVIDER_BRANDS = new Set(['gmx', 'yandex', 'yahoo', 'hotmail', 'outlook', 'live', 'windowslive'])
const SECOND_LEVEL = new Set(['co', 'com', 'net', 'org', 'ne', 'or', 'ac', 'gen'])

/** Whether `name` is a mailbox provider's domain or one of its subdomains. */
export function isMailboxProviderDomain(name: string): boolean {
  const labels = name.split('.')
  for (let i = 0; i < labels.length - 1; i++) {
    const rest = labels.slice(i).join('.')
    if (PROVIDER_DOMAINS.has(rest)) return true
    const suffix = labels.slice(i + 1)
    if (!PROVIDER_BRANDS.has(labels[i]!)) continue
    if (suffix.length === 1 && /^[a-z]{2,3}$/.test(suffix[0]!)) return true
    if (suffix.length === 2 && SECOND_LEVEL.has(suffix[0]!) && /^[a-z]{2}$/.test(suffix[1]!)) return true
  }
  return false
}

const invalid = (field: string, message: string) => new AppError('validation_error', { message: `Invalid \`${field}\`: ${message}.`, details: [{ field, message }] })

/** Lower-case ASCII (IDNs as punycode), without a trailing dot; a validation error otherwise. */
export function normalizeDomainName(raw: string): string {
  let name = raw.trim().replace(/\.$/, '').toLowerCase()
  if (/[^\x00-\x7f]/.test(name)) name = domainToASCII(name)
  if (!name || !HOST_RE.test(name)) throw invalid('name', 'must be a domain name such as example.com (letters, digits, hyphens; at least two labels)')
  return name
}

function regionOf(raw: string | undefined): 'us' | 'eu' {
  if (raw === undefined) return 'us'
  const region = REGIONS[raw.trim().toLowerCase()]
  if (!region) throw new AppError('invalid_region', { message: `Region must be \`us\` or \`eu\` (Resend's us-east-1, sa-east-1 and ap-northeast-1 mean \`us\`, eu-west-1 means \`eu\`); got "${raw}".` })
  return region
}

/** The public shape: Resend's domain object plus `object`, `tls`, the check window and each record's `detail`. */
export function toDomain(row: DomainRow, config: Deps['config']) {
  return {
    ...toListItem(row),
    // Only DKIM, SPF, DMARC, Receiving and Tracking records are ever built.
    records: buildRecords(row, config) as DnsRecord[],
    verified_at: row.verifiedAt,
    last_checked_at: row.lastCheckedAt,
    check_window_ends_at: iso(windowEndsAt(row)),
    updated_at: row.updatedAt,
  }
}

function toListItem(row: DomainRow) {
  return {
    object: 'domain' as const,
    id: row.id,
    name: row.name,
    status: row.status,
    created_at: row.createdAt,
    region: row.region,
    capabilities: { sending: row.sendingEnabled ? ('enabled' as const) : ('disabled' as const), receiving: row.receivingEnabled ? ('enabled' as const) : ('disabled' as const) },
    open_tracking: row.openTracking,
    click_tracking: row.clickTracking,
    tracking_subdomain: row.trackingSubdomain,
    tls: row.tls,
    custom_return_path: row.customReturnPath,
  }
}

/**
 * What a verification check did: `verified` when it changed the domain's status
 * or what its records show (a DKIM rotation completing included), `checked` when
 * only the time of the check moved.
 */
function checkAction(before: DomainRow, after: DomainRow) {
  const seen = (d: DomainRow) => JSON.stringify([d.status, d.records])
  return seen(before) === seen(after) ? 'checked' : 'verified'
}

export async function findDomain(deps: Deps, actor: Actor, id: string): Promise<DomainRow> {
  const [row] = await deps.db.q
    .select()
    .from(domains)
    .where(and(eq(domains.id, id.toLowerCase()), eq(domains.accountId, actor.accountId)))
  if (!row) throw notFound(`Domain ${id}`)
  return row
}

/**
 * The account's domain by name when it may send: verified and with sending
 * enabled. For the send path and the MTA (DKIM key, return path).
 */
export async function findVerifiedSendingDomain(deps: Pick<Deps, 'db'>, accountId: string, domainName: string): Promise<DomainRow | null> {
  const name = domainName.trim().replace(/\.$/, '').toLowerCase()
  const [row] = await deps.db.q
    .select()
    .from(domains)
    .where(and(eq(domains.accountId, accountId), eq(domains.name, name), eq(domains.status, 'verified'), eq(domains.sendingEnabled, true)))
    .limit(1)
  return row ?? null
}

async function verifiedElsewhere(q: Deps['db']['q'], accountId: string, name: string) {
  const [other] = await q
    .select({ id: domains.id })
    .from(domains)
    .where(and(eq(domains.name, name), ne(domains.accountId, accountId), eq(domains.status, 'verified')))
    .limit(1)
  return !!other
}

/** The return-path host may be no other domain's name, and the name no other domain's return-path host (any account). */
async function assertReturnPathFree(tx: Tx, name: string, returnPath: string) {
  const rp = `${returnPath}.${name}`
  const [clash] = await tx
    .select({ name: domains.name, rp: domains.customReturnPath })
    .from(domains)
    .where(and(ne(domains.name, name), or(eq(domains.name, rp), sql`${domains.customReturnPath} || '.' || ${domains.name} = ${name}`)))
    .limit(1)
  if (!clash) return
  throw new AppError('return_path_subdomain_in_use', {
    message:
      clash.name === rp
        ? `The return-path subdomain ${rp} is itself a sending domain on this service; choose another \`custom_return_path\`.`
        : `${name} is the return-path subdomain of ${clash.name}; it cannot also be a sending domain.`,
  })
}

export async function createDomain(deps: Deps, actor: Actor, input: CreateDomain) {
  const name = normalizeDomainName(input.name)
  if (isMailboxProviderDomain(name)) {
    throw new AppError('mailbox_provider_domain', { message: `${name} belongs to a mailbox provider; only the provider can publish its DNS records. Add a domain you own.` })
  }
  assertClaimable(deps, name)
  await assertNotBlocklisted(deps, name)
  const region = regionOf(input.region)
  const returnPath = (input.custom_return_path ?? 'send').toLowerCase()
  const tracking = input.tracking_subdomain ? input.tracking_subdomain.toLowerCase() : null
  if (tracking && tracking === returnPath) throw invalid('tracking_subdomain', `must differ from \`custom_return_path\` (${returnPath})`)
  const key = await generateDkimKey()
  const now = iso(deps.clock.now())
  const row: DomainRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    name,
    region,
    status: 'pending',
    customReturnPath: returnPath,
    clickTracking: input.click_tracking ?? false,
    openTracking: input.open_tracking ?? false,
    trackingSubdomain: tracking,
    tls: input.tls ?? 'opportunistic',
    sendingEnabled: (input.capabilities?.sending ?? 'enabled') === 'enabled',
    receivingEnabled: (input.capabilities?.receiving ?? 'disabled') === 'enabled',
    dkimSelector: key.selector,
    dkimPrivateKey: key.privateKey,
    dkimPublicKey: key.publicKey,
    dkimNextSelector: null,
    dkimNextPrivateKey: null,
    dkimNextPublicKey: null,
    records: [],
    verifiedAt: null,
    lastCheckedAt: null,
    checkWindowStartedAt: now,
    createdAt: now,
    updatedAt: now,
  }
  row.records = buildRecords(row, deps.config)
  await deps.db.write(async (tx) => {
    const [same] = await tx.select({ id: domains.id }).from(domains).where(and(eq(domains.accountId, actor.accountId), eq(domains.name, name)))
    if (same) throw new AppError('domain_already_exists', { message: `${name} is already on this account (${same.id}).`, extra: { domain_id: same.id } })
    if (await verifiedElsewhere(tx, actor.accountId, name)) {
      throw new AppError('domain_verified_elsewhere', { message: `${name} is verified on another account; it can be added here once that account removes it.` })
    }
    const limit = deps.config.domainLimit
    if (limit !== undefined) {
      const [{ n }] = await tx.select({ n: count() }).from(domains).where(eq(domains.accountId, actor.accountId))
      if (n >= limit) throw new AppError('domain_limit_reached', { message: `This account has ${n} of its ${limit} domains; delete one to add ${name}.` })
    }
    await assertReturnPathFree(tx, name, returnPath)
    await tx.insert(domains).values(row)
  })
  const domain = toDomain(row, deps.config)
  await recordChange(deps, actor, { resource: 'domain', resourceId: row.id, action: 'created', before: null, after: domain })
  return domain
}

export async function listDomains(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('domains'), query: q, id: domains.id },
    (ks) => deps.db.q.select().from(domains).where(and(eq(domains.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toListItem,
  )
}

export async function getDomain(deps: Deps, actor: Actor, id: string) {
  return toDomain(await findDomain(deps, actor, id), deps.config)
}

const immutable = (field: string, current: string) =>
  new AppError('domain_field_immutable', { message: `\`${field}\` cannot change (it is ${current}); only click_tracking, open_tracking and tracking_subdomain can. Delete the domain and add it again to change it.` })

/**
 * Changes tracking. `name`, `region` and `custom_return_path`, and also `tls`
 * and `capabilities`, are accepted only with their current value (the seed: only
 * the three tracking fields can be patched).
 */
export async function updateDomain(deps: Deps, actor: Actor, id: string, input: UpdateDomain) {
  const row = await findDomain(deps, actor, id)
  if (input.name !== undefined && (typeof input.name !== 'string' || input.name.trim().replace(/\.$/, '').toLowerCase() !== row.name)) throw immutable('name', row.name)
  if (input.region !== undefined && (typeof input.region !== 'string' || REGIONS[input.region.trim().toLowerCase()] !== row.region)) throw immutable('region', row.region)
  if (input.custom_return_path !== undefined && (typeof input.custom_return_path !== 'string' || input.custom_return_path.toLowerCase() !== row.customReturnPath)) {
    throw immutable('custom_return_path', row.customReturnPath)
  }
  if (input.tls !== undefined && input.tls !== row.tls) throw immutable('tls', row.tls)
  const caps = input.capabilities
  if (caps?.sending !== undefined && (caps.sending === 'enabled') !== row.sendingEnabled) throw immutable('capabilities.sending', row.sendingEnabled ? 'enabled' : 'disabled')
  if (caps?.receiving !== undefined && (caps.receiving === 'enabled') !== row.receivingEnabled) throw immutable('capabilities.receiving', row.receivingEnabled ? 'enabled' : 'disabled')

  const patch: Partial<DomainRow> = {}
  if (input.tracking_subdomain !== undefined) {
    const ts = input.tracking_subdomain?.trim().toLowerCase() ?? ''
    if (ts === '') {
      if (row.trackingSubdomain) {
        throw new AppError('tracking_subdomain_cannot_be_removed', { message: `The tracking subdomain ${row.trackingSubdomain} can be changed to another label but not removed; turn click_tracking and open_tracking off instead.` })
      }
    } else {
      if (!LABEL_RE.test(ts)) throw invalid('tracking_subdomain', 'must be one DNS label: letters, digits and inner hyphens, at most 63 characters')
      if (ts === row.customReturnPath) throw invalid('tracking_subdomain', `must differ from \`custom_return_path\` (${row.customReturnPath})`)
      if (ts !== row.trackingSubdomain) patch.trackingSubdomain = ts
    }
  }
  const turningOn = (input.open_tracking === true && !row.openTracking) || (input.click_tracking === true && !row.clickTracking)
  if (turningOn) {
    const after = { ...row, ...patch }
    if (!after.trackingSubdomain) {
      throw new AppError('tracking_subdomain_unverified', {
        message: `Tracking needs a tracking subdomain: set \`tracking_subdomain\` (e.g. "links"), publish its CNAME, run POST /domains/${row.id}/verify, then turn tracking on.`,
      })
    }
    if (patch.trackingSubdomain !== undefined || !trackingVerified(after)) {
      throw new AppError('tracking_subdomain_unverified', {
        message: `The tracking host ${trackingHost(after)} is not verified: publish a CNAME from it to ${deps.config.hostname}, run POST /domains/${row.id}/verify, then turn tracking on.`,
      })
    }
  }
  if (input.open_tracking !== undefined) patch.openTracking = input.open_tracking
  if (input.click_tracking !== undefined) patch.clickTracking = input.click_tracking
  const next: DomainRow = { ...row, ...patch, updatedAt: iso(deps.clock.now()) }
  next.records = buildRecords(next, deps.config)
  await deps.db.write((tx) =>
    tx
      .update(domains)
      .set({ ...patch, records: next.records, updatedAt: next.updatedAt })
      .where(eq(domains.id, row.id)),
  )
  const domain = toDomain(next, deps.config)
  await recordChange(deps, actor, { resource: 'domain', resourceId: row.id, action: 'updated', before: toDomain(row, deps.config), after: domain })
  return domain
}

export async function deleteDomain(deps: Deps, actor: Actor, id: string) {
  const row = await findDomain(deps, actor, id)
  await deps.db.write((tx) => tx.delete(domains).where(eq(domains.id, row.id)))
  await recordChange(deps, actor, { resource: 'domain', resourceId: row.id, action: 'deleted', before: toDomain(row, deps.config), after: null })
  return { object: 'domain' as const, id: row.id, deleted: true }
}

/** Verify's own refusals, most fundamental first. */
const PROBLEM_ORDER: CheckProblem['code'][] = ['spf_conflict', 'spf_lookup_limit', 'dkim_key_mismatch']

/**
 * Checks DNS now and stores what it found. A domain that never verified and
 * whose 72-hour window has closed gets a new window; one closed more than
 * 7 days ago needs `reopen: true`.
 */
export async function verifyDomain(deps: Deps, actor: Actor, id: string, input: { reopen?: boolean } = {}) {
  const row = await findDomain(deps, actor, id)
  if (row.status !== 'verified' && (await verifiedElsewhere(deps.db.q, actor.accountId, row.name))) {
    throw new AppError('domain_verified_elsewhere', { message: `${row.name} is already verified on another account; it cannot be verified on two. Delete it here, or have the other account remove it.` })
  }
  const now = deps.clock.now()
  const windowEnd = windowEndsAt(row)
  const patch: Partial<DomainRow> = {}
  if (row.verifiedAt === null && now >= windowEnd) {
    if (now >= windowEnd + REOPEN_GRACE_DAYS * DAY && input.reopen !== true) {
      throw new AppError('domain_check_window_expired', {
        message: `The verification window of ${row.name} closed on ${iso(windowEnd)}, more than ${REOPEN_GRACE_DAYS} days ago. Send {"reopen": true} to POST /domains/${row.id}/verify to check again and open a new 72-hour window.`,
      })
    }
    patch.checkWindowStartedAt = iso(now)
  }
  const current: DomainRow = { ...row, ...patch }
  const outcome = await checkDomain(deps.config, current, now)
  if (outcome.unreachable) {
    throw new AppError('dns_unreachable', { message: `No DNS server gave an answer, so nothing was checked. ${outcome.unreachableReason ?? ''}`.trim() })
  }
  const problem = PROBLEM_ORDER.map((c) => outcome.problems.find((p) => p.code === c)).find(Boolean)
  if (problem) throw new AppError(problem.code, { message: problem.message })
  Object.assign(patch, outcome.patch)
  await deps.db.write((tx) => tx.update(domains).set(patch).where(eq(domains.id, row.id)))
  const after: DomainRow = { ...row, ...patch }
  const domain = toDomain(after, deps.config)
  await recordChange(deps, actor, { resource: 'domain', resourceId: row.id, action: checkAction(row, after), before: toDomain(row, deps.config), after: domain })
  return domain
}

/**
 * Starts a DKIM key rotation: a new selector and key published beside the old
 * one. The old key keeps signing until a check sees the new record; then the new
 * key becomes current and the old record is dropped. Rotating again while one is
 * pending replaces the pending key.
 */
export async function rotateDkim(deps: Deps, actor: Actor, id: string) {
  const row = await findDomain(deps, actor, id)
  const key = await generateDkimKey(row.dkimSelector)
  const next: DomainRow = {
    ...row,
    dkimNextSelector: key.selector,
    dkimNextPrivateKey: key.privateKey,
    dkimNextPublicKey: key.publicKey,
    updatedAt: iso(deps.clock.now()),
  }
  next.records = buildRecords(next, deps.config)
  await deps.db.write((tx) =>
    tx
      .update(domains)
      .set({ dkimNextSelector: next.dkimNextSelector, dkimNextPrivateKey: next.dkimNextPrivateKey, dkimNextPublicKey: next.dkimNextPublicKey, records: next.records, updatedAt: next.updatedAt })
      .where(eq(domains.id, row.id)),
  )
  const domain = toDomain(next, deps.config)
  await recordChange(deps, actor, { resource: 'domain', resourceId: row.id, action: 'dkim_rotated', before: toDomain(row, deps.config), after: domain })
  return domain
}

/**
 * The scheduled re-check: domains that never verified, every run while their
 * window is open (then marked `failed` and left alone); domains that verified
 * once, every 6 hours (every run while a DKIM rotation waits), so a record that
 * disappears is noticed. One domain's failure is logged and the rest go on.
 */
export async function recheckDomains(root: RootDeps, batch = 200) {
  const now = root.clock.now()
  const windowCutoff = iso(now - 72 * HOUR)
  const recheckCutoff = iso(now - VERIFIED_RECHECK_HOURS * HOUR)
  const rows = await root.db.q
    .select()
    .from(domains)
    .where(
      or(
        and(isNull(domains.verifiedAt), or(sql`coalesce(${domains.checkWindowStartedAt}, ${domains.createdAt}) > ${windowCutoff}`, sql`${domains.status} in ('not_started', 'pending', 'temporary_failure')`)),
        and(isNotNull(domains.verifiedAt), or(isNull(domains.lastCheckedAt), lte(domains.lastCheckedAt, recheckCutoff), isNotNull(domains.dkimNextSelector))),
      ),
    )
    .orderBy(sql`${domains.lastCheckedAt} is not null`, asc(domains.lastCheckedAt))
    .limit(batch)
  const result = { checked: 0, closed: 0, failed: 0 }
  for (const row of rows) {
    try {
      let patch: Partial<DomainRow>
      if (row.verifiedAt === null && now >= windowEndsAt(row)) {
        // The window closed without a verification: stop checking.
        patch = { status: domainStatus(row.records, false), updatedAt: iso(now) }
        result.closed++
      } else {
        const outcome = await checkDomain(root.config, row, now)
        if (outcome.unreachable) throw new Error(`DNS unreachable: ${outcome.unreachableReason ?? 'no answer'}`)
        patch = outcome.patch
        if (outcome.status === 'verified' && (await verifiedElsewhere(root.db.q, row.accountId, row.name))) {
          // Another account verified the name first: this one does not become verified.
          patch.status = row.status
          delete patch.verifiedAt
        }
        result.checked++
      }
      // Skip the write when the domain changed meanwhile (PATCH, rotate, verify): the next run sees the new row.
      const after: DomainRow = { ...row, ...patch }
      await root.db.write(async (tx) => {
        const written = await tx.update(domains).set(patch).where(and(eq(domains.id, row.id), eq(domains.updatedAt, row.updatedAt))).returning({ id: domains.id })
        // Only what a person would notice is audited: a status or record that changed, not the time of each check.
        if (written.length && checkAction(row, after) === 'verified') {
          await recordChangeIn(tx, root.ids, iso(now), systemActor(row.accountId), { resource: 'domain', resourceId: row.id, action: 'verified', before: toDomain(row, root.config), after: toDomain(after, root.config) })
        }
      })
    } catch (e) {
      result.failed++
      root.log.error('domain re-check failed', { domain_id: row.id, domain: row.name, error: (e as Error).message })
    }
  }
  return result
}

export { returnPathHost }
