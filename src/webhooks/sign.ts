import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/** A new signing secret: `whsec_` and 24 random bytes in base64, the form Standard Webhooks and Svix libraries take. */
export const newSigningSecret = () => `whsec_${randomBytes(24).toString('base64')}`

/** Signers by secret, so a secret's key is decoded once, not per delivery. Bounded: the oldest goes first. */
const signers = new Map<string, Webhook>()
const MAX_SIGNERS = 1000

function signer(secret: string): Webhook {
  let w = signers.get(secret)
  if (!w) {
    w = new Webhook(secret)
    signers.set(secret, w)
    if (signers.size > MAX_SIGNERS) signers.delete(signers.keys().next().value!)
  }
  return w
}

export interface SigningKeys {
  secret: string
  /** The secret before a rotation, which signs beside the new one until it expires. */
  previousSecret: string | null
  previousSecretExpiresAt: string | null
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-signature` is `v1,` and the
 * base64 HMAC-SHA256 of `id.timestamp.body` under each live secret, space-separated
 * (receivers accept any one that verifies). `compat` repeats them under Svix's
 * `svix-*` names, which receivers written for Resend read.
 */
export function signatureHeaders(keys: SigningKeys, id: string, at: number, body: string, compat: boolean): Record<string, string> {
  const when = new Date(at)
  const previous = keys.previousSecretExpiresAt && Date.parse(keys.previousSecretExpiresAt) > at ? keys.previousSecret : null
  const signature = [keys.secret, previous].filter((s): s is string => !!s).map((s) => signer(s).sign(id, when, body)).join(' ')
  const timestamp = String(Math.floor(at / 1000))
  const headers: Record<string, string> = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }
  if (compat) Object.assign(headers, { 'svix-id': id, 'svix-timestamp': timestamp, 'svix-signature': signature })
  return headers
}
