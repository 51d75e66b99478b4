import type { Deps } from '../deps'
import { MINUTE } from '../lib/clock'
import { sha256 } from '../lib/crypto'

/** Most (key, recipient, content) entries remembered; the oldest-touched go first. */
const MAX_ENTRIES = 100_000

/**
 * What each key sent to whom lately, by content hash, kept in this process: the
 * loop guard costs no query. One memory per process's dependencies (tests run
 * several apps in one process).
 */
class LoopMemory {
  private readonly seen = new Map<string, number[]>()

  /** How many copies are still within the window. */
  count(key: string, now: number, windowMs: number) {
    const times = this.seen.get(key)?.filter((t) => t > now - windowMs) ?? []
    return times.length
  }

  note(key: string, now: number, windowMs: number) {
    const times = (this.seen.get(key) ?? []).filter((t) => t > now - windowMs)
    this.seen.delete(key)
    this.seen.set(key, [...times, now])
    for (const k of this.seen.keys()) {
      if (this.seen.size <= MAX_ENTRIES) break
      this.seen.delete(k)
    }
  }
}

const memories = new WeakMap<object, LoopMemory>()
const memoryOf = (deps: Deps) => {
  let m = memories.get(deps.buckets)
  if (!m) memories.set(deps.buckets, (m = new LoopMemory()))
  return m
}

export interface Message {
  subject: string | undefined
  html: string | null
  text: string | null
  recipients: { address: string }[]
}

const contentHash = (m: Message) => sha256(JSON.stringify([m.subject ?? '', m.html ?? '', m.text ?? '']))

/** Headers that mark a message as sent by a machine on its own (RFC 3834 and common practice). */
export function autoReplyMark(headers: Record<string, string>): string | null {
  const get = (name: string) => Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1]?.trim()
  const submitted = get('auto-submitted')
  if (submitted && submitted.toLowerCase() !== 'no') return `Auto-Submitted: ${submitted}`
  for (const h of ['x-autoreply', 'x-autorespond', 'x-auto-response-suppress']) {
    const v = get(h)
    if (v !== undefined) return `${h}: ${v}`
  }
  const precedence = get('precedence')
  if (precedence && /^(auto_reply|bulk|junk|list)$/i.test(precedence)) return `Precedence: ${precedence}`
  return null
}

/**
 * The loop a send would continue, if any: a recipient who already got this exact
 * content `loopGuardRepeats` times within the window from this key, or an answer
 * to an automatic reply. `remember` notes the send once it is accepted.
 */
export function findLoop(deps: Deps, keyId: string, messages: Message[], now: number, answersAutoReply: string | null) {
  const { loopGuardRepeats, loopGuardWindowMinutes } = deps.config.controls
  const windowMs = loopGuardWindowMinutes * MINUTE
  const memory = memoryOf(deps)
  const keys = messages.flatMap((m) => {
    const hash = contentHash(m)
    return m.recipients.map((r) => ({ address: r.address, key: `${keyId}|${r.address}|${hash}` }))
  })
  let loop: string | null = answersAutoReply ? `This reply answers an automatic reply (${answersAutoReply}); agents answering each other’s auto-replies never stop.` : null
  for (const k of keys) {
    if (loop) break
    const n = memory.count(k.key, now, windowMs)
    if (n >= loopGuardRepeats) loop = `This key already sent this exact message to ${k.address} ${n} times in the last ${loopGuardWindowMinutes} minutes.`
  }
  return { loop, remember: () => keys.forEach((k) => memory.note(k.key, now, windowMs)) }
}
