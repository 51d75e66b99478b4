// Rows for delivery tests: a verified domain with a real DKIM key, and emails with
// their outbox rows written the way the send API writes them.
import { generateKeyPairSync } from 'node:crypto'
import { deliveries, domains, emailAttachments, emails } from '../../src/db/tables'
import { recordEvent } from '../../src/emails/events'
import { iso } from '../../src/lib/clock'
import { bareAddress } from '../../src/emails/address'
import type { AttachmentRow, DomainRow, EmailRow } from '../../src/delivery/types'
import type { RootDeps } from '../../src/deps'

let keyPair: { privateKey: string; publicKey: string } | null = null

/** One RSA-2048 key for the whole run (making one costs a noticeable moment). */
export function testDkimKey() {
  if (!keyPair) {
    const k = generateKeyPairSync('rsa', { modulusLength: 2048 })
    keyPair = {
      privateKey: k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      publicKey: k.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    }
  }
  return keyPair
}

export async function insertDomain(root: RootDeps, accountId: string, name = 'acme.test', over: Partial<DomainRow> = {}): Promise<DomainRow> {
  const key = testDkimKey()
  const now = iso(root.clock.now())
  const row: DomainRow = {
    id: root.ids.uuid(),
    accountId,
    name,
    region: 'us',
    status: 'verified',
    customReturnPath: 'send',
    clickTracking: false,
    openTracking: false,
    trackingSubdomain: null,
    tls: 'opportunistic',
    sendingEnabled: true,
    receivingEnabled: false,
    dkimSelector: 'mailroom',
    dkimPrivateKey: key.privateKey,
    dkimPublicKey: key.publicKey,
    dkimNextSelector: null,
    dkimNextPrivateKey: null,
    dkimNextPublicKey: null,
    records: [],
    verifiedAt: now,
    lastCheckedAt: now,
    checkWindowStartedAt: now,
    createdAt: now,
    updatedAt: now,
    ...over,
  }
  await root.db.write((tx) => tx.insert(domains).values(row))
  return row
}

export interface NewEmail {
  accountId: string
  domain: DomainRow | null
  to: string[]
  cc?: string[]
  bcc?: string[]
  from?: string
  subject?: string
  html?: string | null
  text?: string | null
  replyTo?: string[]
  headers?: Record<string, string>
  topicId?: string | null
  inReplyTo?: string | null
  references?: string | null
  priority?: 'transactional' | 'bulk'
  /** ISO time: the rows are `scheduled` until then. */
  scheduledAt?: string | null
  attachments?: Omit<AttachmentRow, 'id' | 'emailId' | 'accountId' | 'size'>[]
}

/** The emails row, its attachments, one outbox row per recipient and the queued/scheduled event, in one transaction. */
export async function insertEmail(root: RootDeps, e: NewEmail): Promise<{ email: EmailRow; deliveryIds: string[] }> {
  const now = iso(root.clock.now())
  const id = root.ids.uuid()
  const fromEmail = e.domain ? `hello@${e.domain.name}` : 'hello@simulator.test'
  const email: EmailRow = {
    id,
    accountId: e.accountId,
    apiKeyId: null,
    domainId: e.domain?.id ?? null,
    from: e.from ?? `Acme <${fromEmail}>`,
    fromEmail,
    fromDomain: fromEmail.slice(fromEmail.indexOf('@') + 1),
    to: e.to,
    cc: e.cc ?? [],
    bcc: e.bcc ?? [],
    replyTo: e.replyTo ?? [],
    subject: e.subject ?? 'Your sign-in link',
    html: e.html === undefined ? '<p>Hello <b>there</b></p>' : e.html,
    text: e.text === undefined ? 'Hello there' : e.text,
    headers: e.headers ?? {},
    tags: [],
    topicId: e.topicId ?? null,
    templateId: null,
    broadcastId: null,
    messageId: `${id}@${root.config.hostname}`,
    inReplyTo: e.inReplyTo ?? null,
    references: e.references ?? null,
    priority: e.priority ?? 'transactional',
    simulator: !e.domain,
    openTracking: false,
    clickTracking: false,
    scheduledAt: e.scheduledAt ?? null,
    lastEvent: e.scheduledAt ? 'scheduled' : 'queued',
    createdAt: now,
    updatedAt: now,
  }
  const deliveryIds: string[] = []
  await root.db.write(async (tx) => {
    await tx.insert(emails).values(email)
    for (const a of e.attachments ?? []) {
      await tx.insert(emailAttachments).values({ ...a, id: root.ids.uuid(), emailId: id, accountId: e.accountId, size: a.content.length })
    }
    const kinds: ['to' | 'cc' | 'bcc', string[]][] = [['to', email.to], ['cc', email.cc], ['bcc', email.bcc]]
    for (const [kind, list] of kinds) {
      for (const address of list) {
        const recipient = bareAddress(address)
        const did = root.ids.uuid()
        deliveryIds.push(did)
        await tx.insert(deliveries).values({
          id: did,
          emailId: id,
          accountId: e.accountId,
          recipient,
          recipientDomain: recipient.split('@')[1],
          kind,
          state: e.scheduledAt ? 'scheduled' : 'queued',
          priority: email.priority === 'bulk' ? 1 : 0,
          nextAttemptAt: e.scheduledAt ?? now,
          attempts: 0,
          leaseOwner: null,
          leaseUntil: null,
          lastCode: null,
          lastResponse: null,
          createdAt: now,
          updatedAt: now,
        })
      }
    }
    await recordEvent(tx, root.ids, { accountId: e.accountId, emailId: id, type: e.scheduledAt ? 'scheduled' : 'queued', at: now })
  })
  return { email, deliveryIds }
}
