import { t } from 'elysia'

export const Health = t.Object({ object: t.Literal('health'), status: t.Literal('ok') })

const Check = t.Object({ status: t.Union([t.Literal('ok'), t.Literal('failing'), t.Literal('not_configured')]), detail: t.Optional(t.String()) })
export const Status = t.Object({
  object: t.Literal('status'),
  status: t.Union([t.Literal('ok'), t.Literal('degraded')]),
  version: t.String(),
  uptime_seconds: t.Integer(),
  checks: t.Object({
    storage: t.Composite([Check, t.Object({ latency_ms: t.Optional(t.Number()) })]),
    scheduler: t.Composite([Check, t.Object({ jobs: t.Array(t.Object({ name: t.String(), next_run_at: t.Nullable(t.String()) })) })]),
    delivery: t.Composite([Check, t.Object({ mode: t.String(), backlog: t.Integer({ description: 'outbox rows due and not yet delivered' }) })]),
    smtp_listener: t.Composite([Check, t.Object({ port: t.Optional(t.Integer({ description: 'the port it listens on' })) })]),
    webhook_dispatcher: t.Composite([Check, t.Object({ backlog: t.Integer() })]),
  }),
})

export const OpenApiDocument = t.Object({ openapi: t.String(), info: t.Any(), paths: t.Any() }, { additionalProperties: true })
