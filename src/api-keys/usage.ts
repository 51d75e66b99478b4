import { sql } from 'drizzle-orm'
import type { Database } from '../db'
import { apiKeyUsage, apiKeys } from '../db/tables'
import { iso } from '../lib/clock'

interface Pending {
  day: string
  requests: number
  lastUsed: number
}

/**
 * Counts requests per key in memory and writes them in one transaction every few
 * seconds, so authenticating a request never writes to the database. Readers add
 * what is still pending, so the figures are exact within this process.
 */
export class KeyUsage {
  private pending = new Map<string, Pending>()

  record(keyId: string, now: number) {
    const day = iso(now).slice(0, 10)
    const p = this.pending.get(keyId)
    if (p && p.day === day) {
      p.requests++
      p.lastUsed = now
    } else {
      if (p) this.carry.push([keyId, p])
      this.pending.set(keyId, { day, requests: 1, lastUsed: now })
    }
  }

  /** Counts of a finished day waiting for the next flush. */
  private carry: [string, Pending][] = []

  pendingFor(keyId: string): { requests: number; lastUsed: number | null } {
    let requests = 0
    let lastUsed: number | null = null
    for (const [id, p] of [...this.carry, [keyId, this.pending.get(keyId)] as const]) {
      if (id !== keyId || !p) continue
      requests += p.requests
      lastUsed = Math.max(lastUsed ?? 0, p.lastUsed)
    }
    return { requests, lastUsed }
  }

  async flush(db: Database) {
    const rows = [...this.carry, ...this.pending.entries()]
    if (!rows.length) return
    this.pending = new Map()
    this.carry = []
    try {
      await db.write(async (tx) => {
        for (const [keyId, p] of rows) {
          await tx
            .insert(apiKeyUsage)
            .values({ keyId, day: p.day, requests: p.requests })
            .onConflictDoUpdate({ target: [apiKeyUsage.keyId, apiKeyUsage.day], set: { requests: sql`${apiKeyUsage.requests} + ${p.requests}` } })
          await tx
            .update(apiKeys)
            .set({ lastUsedAt: sql`max(coalesce(${apiKeys.lastUsedAt}, ''), ${iso(p.lastUsed)})` })
            .where(sql`${apiKeys.id} = ${keyId}`)
        }
      })
    } catch (e) {
      // Keep the counts for the next flush rather than lose them.
      this.carry.push(...rows)
      throw e
    }
  }
}
