import { expect, test } from 'bun:test'
import { harness, silentLog } from './support/harness'

test('the harness builds the app and the first key works', async () => {
  const h = await harness()
  const r = await h.call('GET', '/api-keys')
  expect(r.status, JSON.stringify([r.body, silentLog.errors])).toBe(200)
  expect(r.body.data).toHaveLength(1)
  await h.close()
})
