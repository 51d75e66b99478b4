import { and, eq, gte, sql } from 'drizzle-orm'
import { domains, emails } from '../db/tables'
import type { Deps } from '../deps'
import type { CheckResult, DomainRow } from '../emails/checks'
import { errorFinding, type Finding } from '../emails/content'
import type { Draft } from '../emails/draft'
import { isSimulatorAddress } from '../emails/simulator'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { DAY, iso } from '../lib/clock'
import { onboardingAddress } from './sender'
import { nextDay, ownRecipients } from './standing'

/** Markup that is more than simple HTML: remote images (tracking pixels), scripts, frames, forms, embedded media. */
const NOT_SIMPLE = /<(img|script|iframe|frame|form|object|embed|link|video|audio|svg)\b/i

/** Why a message is not simple enough for the onboarding sender, or null. */
function shapeProblem(d: Draft): { field: string; why: string } | null {
  if (d.to.length !== 1) return { field: 'to', why: `it writes to exactly one recipient (this message has ${d.to.length})` }
  if (d.cc.length || d.bcc.length) return { field: d.cc.length ? 'cc' : 'bcc', why: 'it sends no copies (cc or bcc)' }
  if (d.attachments.length) return { field: 'attachments', why: 'it sends no attachments' }
  if (d.clickTracking) return { field: 'click_tracking', why: 'it tracks nothing (click_tracking must be off)' }
  if (Object.keys(d.headers).length) return { field: 'headers', why: 'it sets no custom headers' }
  const tag = d.html?.match(NOT_SIMPLE)
  if (tag) return { field: 'html', why: `its HTML is simple: no <${tag[1].toLowerCase()}> elements` }
  return null
}

/**
 * The onboarding sender, in place of the from domain's checks: it exists (the
 * operator set MAILROOM_ONBOARDING_FROM and verified its domain on their own
 * account, whose DKIM key signs), the message is simple, and it goes only to
 * members of the account. `from` becomes the operator's address, keeping the
 * caller's display name.
 */
export async function onboardingChecks(deps: Deps, actor: Actor, draft: Draft): Promise<{ findings: Finding[]; checks: CheckResult[]; domain: DomainRow | null }> {
  const sender = onboardingAddress(deps.config)
  const findings: Finding[] = []
  if (!sender) {
    findings.push(errorFinding('onboarding_sender_unavailable', `${draft.from!.address} is an onboarding sender, and this deployment has none (the operator sets MAILROOM_ONBOARDING_FROM). Verify a domain of your own at /domains and send from it.`, 'from'))
    return { findings, checks: [{ name: 'onboarding_sender', passed: false, detail: 'not configured' }], domain: null }
  }
  const [domain] = await deps.db.q
    .select()
    .from(domains)
    .where(and(eq(domains.name, sender.domain), eq(domains.status, 'verified'), eq(domains.sendingEnabled, true)))
    .limit(1)
  if (!domain) {
    findings.push(errorFinding('onboarding_sender_unavailable', `The onboarding sender ${sender.address} cannot send: its domain ${sender.domain} is not verified for sending on this deployment. Verify a domain of your own at /domains and send from it.`, 'from'))
    return { findings, checks: [{ name: 'onboarding_sender', passed: false, detail: `${sender.domain} not verified` }], domain: null }
  }
  const shape = shapeProblem(draft)
  if (shape) findings.push(errorFinding('onboarding_shape_refused', `The onboarding sender sends only simple messages: ${shape.why}. Verify a domain of your own for anything more.`, shape.field))
  const { members } = await ownRecipients(deps.db.q, actor.accountId)
  const outside = draft.recipients.find((r) => !members.includes(r.address) && !isSimulatorAddress(r.address))
  if (outside) {
    findings.push(errorFinding('onboarding_recipient_not_a_member', `The onboarding sender writes only to members of this account; ${outside.address} is not one. Invite them to the team, or verify a domain of your own.`, outside.kind))
  }
  const name = draft.from!.name || sender.name
  draft.from = { ...sender, given: name ? `"${name.replace(/["\\]/g, '')}" <${sender.address}>` : sender.address, name }
  draft.clickTracking = false
  return { findings, checks: [{ name: 'onboarding_sender', passed: !findings.length, detail: `sent as ${sender.address}, signed for ${domain.name}` }], domain }
}

/** The onboarding sends of the account this UTC day plus these must stay within the daily cap. */
export async function onboardingCap(deps: Deps, actor: Actor, drafts: Pick<Draft, 'from'>[], now: number) {
  const sender = onboardingAddress(deps.config)
  const n = sender ? drafts.filter((d) => d.from?.address === sender.address).length : 0
  if (!sender || !n) return
  const [{ used }] = await deps.db.q
    .select({ used: sql<number>`count(*)` })
    .from(emails)
    .where(and(eq(emails.accountId, actor.accountId), eq(emails.fromEmail, sender.address), gte(emails.createdAt, iso(Math.floor(now / DAY) * DAY))))
  const cap = deps.config.trust.onboardingDailyCap
  if (Number(used) + n > cap) {
    throw new AppError('onboarding_daily_cap_reached', {
      message: `The onboarding sender sends ${cap} emails a day for each account; this account sent ${used} today and this send needs ${n}. It resets at ${nextDay(now)}; a verified domain of your own has no such cap.`,
    })
  }
}
