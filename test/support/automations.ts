import { expect } from 'bun:test'
import type { Harness } from './harness'

type Call = Harness['call']

/** A defined event, through the API. */
export async function defineEvent(call: Call, name: string, schema?: Record<string, string>) {
  const r = await call('POST', '/events', { body: { name, ...(schema ? { schema } : {}) } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; name: string }
}

/** A published template from `acme.dev` (or `from`), with a `name` variable. */
export async function publishedTemplate(call: Call, over: Record<string, unknown> = {}) {
  const made = await call('POST', '/templates', {
    body: {
      name: 'Welcome',
      from: 'Acme <hello@acme.dev>',
      subject: 'Welcome, {{{name}}}',
      html: '<p>Hello {{{name}}}, your plan is {{{plan}}}.</p>',
      variables: [
        { key: 'name', type: 'string', fallback_value: 'friend' },
        { key: 'plan', type: 'string', fallback_value: 'free' },
      ],
      ...over,
    },
  })
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  const published = await call('POST', `/templates/${made.body.id}/publish`)
  expect(published.status, JSON.stringify(published.body)).toBe(200)
  return made.body as { id: string; name: string }
}

export async function contact(call: Call, email: string, over: Record<string, unknown> = {}) {
  const r = await call('POST', '/contacts', { body: { email, ...over } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; email: string }
}

export async function automation(call: Call, body: Record<string, unknown>) {
  const r = await call('POST', '/automations', { body })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; version_id: string; status: string }
}

export async function sendEvent(call: Call, event: string, email: string, payload: Record<string, unknown> = {}) {
  const r = await call('POST', '/events/send', { body: { event, email, payload } })
  expect(r.status, JSON.stringify(r.body)).toBe(202)
  return r.body as { id: string }
}

export interface RunView {
  id: string
  status: string
  contact_id: string
  version: number
  current_step: string | null
  wake_at: string | null
  steps: { key: string; type: string; status: string; attempts: number; output: any; error: any }[]
}

/** Every run of an automation with its step log, oldest first. */
export async function runsOf(call: Call, automationId: string): Promise<RunView[]> {
  const list = await call('GET', `/automations/${automationId}/runs`)
  expect(list.status, JSON.stringify(list.body)).toBe(200)
  const runs: RunView[] = []
  for (const r of [...list.body.data].reverse()) runs.push((await call('GET', `/automations/${automationId}/runs/${r.id}`)).body)
  return runs
}

/** The run of the contact with this id. */
export const runFor = (runs: RunView[], contactId: string) => runs.find((r) => r.contact_id === contactId)!

/** A step log as `key:status` pairs, in order. */
export const trail = (run: RunView) => run.steps.map((s) => `${s.key}:${s.status}`)
