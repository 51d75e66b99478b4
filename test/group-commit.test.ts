import { describe, expect, test } from 'bun:test'
import { createClient } from '@libsql/client'
import { eq } from 'drizzle-orm'
import { join } from 'node:path'
import { apiKeys } from '../src/db/tables'
import { harness } from './support/harness'

describe('group commit', () => {
  test('concurrent requests share commits, and every 2xx is durable: a separate connection sees all of them', async () => {
    const h = await harness({ MAILROOM_RATE_LIMIT: '100000' })
    const replies = await Promise.all(Array.from({ length: 60 }, (_, i) => h.call('POST', '/api-keys', { body: { name: `k${i}` } })))
    expect(replies.every((r) => r.status === 201)).toBe(true)
    const other = createClient({ url: `file:${join(h.dir, 'mailroom.db')}` })
    const n = await other.execute("select count(*) as n from api_keys where name like 'k%'")
    expect(Number(n.rows[0].n)).toBe(60)
    other.close()
    await h.close()
  })

  test('a failing writer undoes only its own writes; the others in the same group commit', async () => {
    const h = await harness()
    const db = h.root.db
    const results = await Promise.allSettled([
      db.write((tx) => tx.update(apiKeys).set({ name: 'one' }).where(eq(apiKeys.accountId, h.accountId))),
      db.write(async (tx) => {
        await tx.update(apiKeys).set({ name: 'doomed' }).where(eq(apiKeys.accountId, h.accountId))
        throw new Error('refused')
      }),
      db.write((tx) => tx.update(apiKeys).set({ scopes: ['topics'] }).where(eq(apiKeys.accountId, h.accountId))),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    const [row] = await db.q.select().from(apiKeys).where(eq(apiKeys.accountId, h.accountId))
    expect(row).toMatchObject({ name: 'one', scopes: ['topics'] })
    await h.close()
  })

  test('a writer that waits alone commits at once', async () => {
    const h = await harness()
    await h.root.db.write((tx) => tx.update(apiKeys).set({ name: 'alone' }).where(eq(apiKeys.accountId, h.accountId)))
    const other = createClient({ url: `file:${join(h.dir, 'mailroom.db')}` })
    expect((await other.execute("select name from api_keys")).rows[0].name).toBe('alone')
    other.close()
    await h.close()
  })
})
