// The official MCP client (Client + StreamableHTTPClientTransport) against the real
// app listening on 127.0.0.1: what an agent's tool host does.
import { afterEach, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { harness, type Harness } from './support/harness'
import { asCookie, person } from './support/people'

let open: { h: Harness; server: ReturnType<typeof Bun.serve>; clients: Client[] }[] = []
afterEach(async () => {
  for (const o of open) {
    for (const c of o.clients) await c.close()
    o.server.stop(true)
    await o.h.close()
  }
  open = []
})

async function serve(env: Record<string, string> = {}) {
  const h = await harness(env)
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => h.app.handle(req) })
  const entry = { h, server, clients: [] as Client[] }
  open.push(entry)
  const connect = async (token: string) => {
    const client = new Client({ name: 'test-agent', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } })
    await client.connect(transport)
    entry.clients.push(client)
    return { client, transport }
  }
  return { h, connect }
}

const mail = (n: number) => ({ from: 'Agent <agent@mcp-client.test>', to: `delivered+${n}@simulator.test`, subject: `Hello ${n}`, text: 'Sent through MCP.' })
const json = (r: unknown) => JSON.parse((r as { content: { text: string }[] }).content[0].text)

describe('MCP over Streamable HTTP with the official client', () => {
  test('connects with a key, lists the tools with the REST schemas, sends to the simulator and reads the email back', async () => {
    const { h, connect } = await serve()
    const { client, transport } = await connect(h.token)
    expect(transport.sessionId).toMatch(/^[A-Za-z0-9]{32}$/)
    expect(client.getServerVersion()).toMatchObject({ name: 'mailroom' })

    const { tools } = await client.listTools()
    const names = tools.map((t) => t.name)
    for (const n of ['send_email', 'send_batch', 'get_email', 'list_email_events', 'explain_email', 'list_contacts', 'create_contact', 'list_topics', 'create_segment', 'create_broadcast', 'send_broadcast', 'get_metrics', 'create_webhook', 'get_key_limits', 'get_usage']) {
      expect(names).toContain(n)
    }
    // The tool's schema is the route's: the same TypeBox object that validates POST /emails.
    const route = (h.app.routes as any[]).find((r) => r.method === 'POST' && r.path === '/emails')
    const send = tools.find((t) => t.name === 'send_email')!
    const { idempotency_key, ...routeFields } = send.inputSchema.properties as Record<string, unknown>
    expect(routeFields).toEqual(JSON.parse(JSON.stringify(route.hooks.body.properties)))
    expect(idempotency_key).toMatchObject({ type: 'string', maxLength: 256 })
    expect(send.description).toContain('POST /emails')

    const sent = await client.callTool({ name: 'send_email', arguments: mail(1) })
    expect(sent.isError, JSON.stringify(sent)).toBe(false)
    const id = json(sent).id
    expect(id).toBeTruthy()
    const got = await client.callTool({ name: 'get_email', arguments: { id } })
    expect(got.isError).toBe(false)
    expect(got.structuredContent).toMatchObject({ id, subject: 'Hello 1' })
    const events = await client.callTool({ name: 'list_email_events', arguments: { id } })
    expect(events.isError, JSON.stringify(events)).toBe(false)
    // The same email over REST: one system, two doors.
    expect((await h.call('GET', `/emails/${id}`)).body.subject).toBe('Hello 1')
  })

  test('a retried tool call with the same idempotency_key answers the first result and sends once; other arguments are refused', async () => {
    const { h, connect } = await serve()
    const { client } = await connect(h.token)
    const first = await client.callTool({ name: 'send_email', arguments: { ...mail(7), idempotency_key: 'agent-retry-7' } })
    expect(first.isError, JSON.stringify(first)).toBe(false)
    const again = await client.callTool({ name: 'send_email', arguments: { ...mail(7), idempotency_key: 'agent-retry-7' } })
    expect(json(again).id).toBe(json(first).id)
    const changed = await client.callTool({ name: 'send_email', arguments: { ...mail(8), idempotency_key: 'agent-retry-7' } })
    expect(json(changed)).toMatchObject({ code: 'idempotency_payload_mismatch' })
    const listed = (await h.call('GET', '/emails?limit=100')).body.data.filter((e: { subject: string }) => e.subject === 'Hello 7')
    expect(listed).toHaveLength(1)
    // Reads carry no such argument: a GET changes nothing to repeat.
    const { tools } = await client.listTools()
    expect(tools.find((t) => t.name === 'get_email')!.inputSchema.properties).not.toHaveProperty('idempotency_key')
  })

  test('a key with a budget of 2 sends two emails, and the third is refused with agent_budget_exceeded', async () => {
    const { h, connect } = await serve()
    const key = await h.key({ name: 'agent', budget_per_period: 2, period: 'monthly' })
    const { client } = await connect(key.token)
    for (const n of [1, 2]) expect((await client.callTool({ name: 'send_email', arguments: mail(n) })).isError).toBe(false)
    const refused = await client.callTool({ name: 'send_email', arguments: mail(3) })
    expect(refused.isError).toBe(true)
    expect(json(refused)).toMatchObject({ code: 'agent_budget_exceeded', fix: expect.any(String), docs_url: 'http://mailroom.test/docs/errors/agent_budget_exceeded' })
    expect(refused._meta).toMatchObject({ http_status: 402 })
    // The key reads its own limits without naming itself.
    const limits = await client.callTool({ name: 'get_key_limits', arguments: {} })
    expect(limits.structuredContent).toMatchObject({ key_id: key.id, budget_per_period: 2, used: 2, remaining: 0 })
  })

  test('a batch above the approval threshold is held for a person; after a person approves, it is sent exactly once', async () => {
    const { h, connect } = await serve({ MAILROOM_APPROVAL_THRESHOLD: '2' })
    const key = await h.key({ name: 'agent' })
    const { client } = await connect(key.token)
    const held = await client.callTool({ name: 'send_batch', arguments: { emails: [mail(1), mail(2), mail(3)] } })
    expect(held.isError).toBe(true)
    expect(json(held)).toMatchObject({ code: 'approval_required', agent_action_id: expect.any(String) })
    const actionId = json(held).agent_action_id as string
    // No tool approves: the agent cannot decide for itself, over MCP or REST.
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).filter((n) => /approve|reject|resume/.test(n))).toEqual([])
    expect((await h.call('POST', `/agent-actions/${actionId}/approve`, { key: key.token })).body.code).toBe('human_action_required')
    const owner = await person(h, { role: 'owner' })
    const approved = await h.call('POST', `/agent-actions/${actionId}/approve`, { ...asCookie(owner.cookie, { origin: 'http://mailroom.test' }) })
    expect(approved.status, JSON.stringify(approved.body)).toBe(200)
    // A second approval does not send again.
    expect((await h.call('POST', `/agent-actions/${actionId}/approve`, { ...asCookie(owner.cookie, { origin: 'http://mailroom.test' }) })).body.code).toBe('agent_action_decided')
    const subjects = (await h.call('GET', '/emails?limit=100')).body.data.map((e: { subject: string }) => e.subject).sort()
    expect(subjects).toEqual(['Hello 1', 'Hello 2', 'Hello 3'])
  })

  test('an agent checks a send before making it, sees why it would be refused, and finds the actions waiting for a person', async () => {
    const { h, connect } = await serve({ MAILROOM_APPROVAL_THRESHOLD: '2' })
    const key = await h.key({ name: 'agent' })
    const { client } = await connect(key.token)
    const names = (await client.listTools()).tools.map((t) => t.name)
    for (const n of ['lint_email', 'preflight_email', 'cancel_email', 'reschedule_email', 'list_domains', 'create_domain', 'verify_domain', 'list_suppressions', 'render_template', 'get_trust_standing', 'list_agent_actions', 'get_deliverability_report', 'search_support_answers']) {
      expect(names).toContain(n)
    }
    const ok = await client.callTool({ name: 'preflight_email', arguments: mail(1) })
    expect(ok.isError, JSON.stringify(ok)).toBe(false)
    expect(json(ok)).toMatchObject({ object: 'preflight', ok: true, simulator: true, recipients: 1 })
    const refused = await client.callTool({ name: 'preflight_email', arguments: { ...mail(2), from: 'agent@unverified.example', to: 'someone@example.org' } })
    expect(json(refused)).toMatchObject({ ok: false, findings: expect.arrayContaining([expect.objectContaining({ code: 'domain_not_verified' })]) })
    expect(json(await client.callTool({ name: 'list_domains', arguments: {} }))).toMatchObject({ data: [] })
    expect(json(await client.callTool({ name: 'get_trust_standing', arguments: {} }))).toHaveProperty('level')
    // Nothing was sent or spent by the checks.
    expect((await h.call('GET', '/emails')).body.data).toEqual([])
    const held = await client.callTool({ name: 'send_batch', arguments: { emails: [mail(3), mail(4), mail(5)] } })
    const actions = json(await client.callTool({ name: 'list_agent_actions', arguments: {} }))
    expect(actions.data.map((a: { id: string }) => a.id)).toContain(json(held).agent_action_id)
  })

  test('a sending-only key sees every tool but management tools answer restricted_api_key, as over REST', async () => {
    const { h, connect } = await serve()
    const key = await h.key({ name: 'sender', permission: 'sending_access' })
    const { client } = await connect(key.token)
    const r = await client.callTool({ name: 'list_contacts', arguments: {} })
    expect(r.isError).toBe(true)
    expect(json(r).code).toBe('restricted_api_key')
  })
})
