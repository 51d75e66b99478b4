// The official Resend SDK (npm `resend`), pointed at Mailroom over real HTTP, must work unchanged.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resend } from 'resend'
import { harness, type Harness } from './support/harness'

let h: Harness
let server: ReturnType<typeof Bun.serve>
let resend: Resend

beforeAll(async () => {
  h = await harness({ MAILROOM_RATE_LIMIT: '100000' })
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => h.app.handle(req) })
  resend = new Resend(h.token, { baseUrl: `http://127.0.0.1:${server.port}` } as never)
})
afterAll(async () => {
  server.stop(true)
  await h.close()
})

describe('resend SDK 6.38 against Mailroom', () => {
  test('emails: send with an idempotency key (replayed), get, batch, and errors in the SDK’s error object', async () => {
    const first = await resend.emails.send({ from: 'Agent <agent@anywhere.dev>', to: 'delivered@resend.dev', subject: 'Hi', text: 'Hello' }, { idempotencyKey: 'sdk-1' })
    expect(first.error).toBeNull()
    const again = await resend.emails.send({ from: 'Agent <agent@anywhere.dev>', to: 'delivered@resend.dev', subject: 'Hi', text: 'Hello' }, { idempotencyKey: 'sdk-1' })
    expect(again.data?.id).toBe(first.data!.id)
    const got = await resend.emails.get(first.data!.id)
    expect(got.data).toMatchObject({ object: 'email', id: first.data!.id, subject: 'Hi', to: ['delivered@resend.dev'], last_event: 'queued' })
    const batch = await resend.batch.send([
      { from: 'a@anywhere.dev', to: 'delivered@simulator.test', subject: 'one', text: '1' },
      { from: 'a@anywhere.dev', to: 'bounced@simulator.test', subject: 'two', text: '2' },
    ])
    expect(batch.data?.data).toHaveLength(2)
    const bad = await resend.emails.send({ from: 'not an address', to: 'delivered@resend.dev', subject: 'x', text: 'y' })
    expect(bad.data).toBeNull()
    expect(bad.error).toMatchObject({ name: 'invalid_from_address', statusCode: 422 })
    const cancel = await resend.emails.cancel(first.data!.id)
    expect(cancel.error).toMatchObject({ statusCode: 409 })
  })

  test('API keys: create, list, remove', async () => {
    const made = await resend.apiKeys.create({ name: 'sdk key', permission: 'sending_access' })
    expect(made.data?.token).toStartWith('mr_')
    const list = await resend.apiKeys.list()
    expect(list.data?.data.map((k) => k.id)).toContain(made.data!.id)
    const removed = await resend.apiKeys.remove(made.data!.id)
    expect(removed.error).toBeNull()
  })

  test('topics and contacts, including the bare-array topic answers the SDK sends', async () => {
    const topic = await resend.topics.create({ name: 'Product news', defaultSubscription: 'opt_in' } as never)
    expect(topic.error).toBeNull()
    const topicId = topic.data!.id
    expect((await resend.topics.get(topicId)).data).toMatchObject({ name: 'Product news', default_subscription: 'opt_in' })
    const contact = await resend.contacts.create({ email: 'ada@example.org', firstName: 'Ada' } as never)
    expect(contact.error).toBeNull()
    const answered = await resend.contacts.topics.update({ email: 'ada@example.org', topics: [{ id: topicId, subscription: 'opt_in' }] } as never)
    expect(answered.error).toBeNull()
    const listed = await resend.contacts.topics.list({ email: 'ada@example.org' } as never)
    expect(listed.data?.data.find((t: { id: string }) => t.id === topicId)).toMatchObject({ subscription: 'opt_in' })
    expect((await resend.contacts.get({ email: 'ada@example.org' } as never)).data).toMatchObject({ email: 'ada@example.org', first_name: 'Ada' })
    expect((await resend.contacts.remove({ email: 'ada@example.org' } as never)).error).toBeNull()
    expect((await resend.topics.remove(topicId)).error).toBeNull()
  })

  test('domains: create, get, list, verify, remove', async () => {
    const d = await resend.domains.create({ name: 'sdk-example.com' })
    expect(d.data).toMatchObject({ name: 'sdk-example.com', records: expect.any(Array) })
    expect((await resend.domains.get(d.data!.id)).data).toMatchObject({ object: 'domain', name: 'sdk-example.com' })
    expect((await resend.domains.list()).data?.data.map((x) => x.id)).toContain(d.data!.id)
    expect((await resend.domains.remove(d.data!.id)).error).toBeNull()
  })
})
