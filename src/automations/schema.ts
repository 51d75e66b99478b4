import { t, type Static, type TSchema } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'

const MAX_STEPS = 150
const MAX_RULES = 50

/** A union of string literals that keeps their type (a mapped array would widen to string). */
const oneOf = <T extends string>(values: readonly T[], options?: Parameters<typeof t.Union>[1]) => t.Union(values.map((v) => t.Literal(v)) as unknown as TSchema[], options) as unknown as ReturnType<typeof t.Literal<T>>

const StepKey = t.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z0-9_.:-]+$',
  description: 'unique in the automation; letters, digits, `_`, `.`, `:` and `-`',
  error: 'must be 1 to 100 letters, digits, `_`, `.`, `:` or `-`',
})

/** A field of the run's data: the trigger's payload, the contact, or the payload a wait step received. */
const FieldPath = t.String({
  minLength: 1,
  maxLength: 300,
  pattern: '^(event|contact|wait_events)\\.[^\\s]+$',
  description: '`event.<key>` (the trigger’s payload), `contact.<field or property>`, or `wait_events.<event name>.<key>`; dots reach into nested objects',
  error: 'must start with `event.`, `contact.` or `wait_events.`',
})

const EventName = t.String({
  minLength: 1,
  maxLength: 100,
  description: 'a defined event (POST /events), or a system event: `mailroom:contact.created`, `mailroom:topic.answered` (payload `{topic_id, subscribed}`)',
})

const Duration = t.String({
  minLength: 1,
  maxLength: 100,
  description: 'a duration such as `30 minutes`, `12 hours`, `3 days`, `1 week` or `1 day 6 hours` (units: second, minute, hour, day, week, or s, m, h, d, w)',
})

const Operator = oneOf(
  ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'starts_with', 'ends_with', 'exists', 'is_empty'],
  { description: '`exists` and `is_empty` take no value; `gt`, `gte`, `lt`, `lte` compare numbers (or ISO dates)' },
)

const RuleValue = t.Union([t.String({ maxLength: 10_000 }), t.Number(), t.Boolean(), t.Null()])

/** One comparison. `type` may be left out (Resend's filter rules do). */
export const RuleLeaf = t.Object({
  type: t.Optional(t.Literal('rule')),
  field: FieldPath,
  operator: Operator,
  value: t.Optional(RuleValue),
})
/** All (`and`) or any (`or`) of nested rules and groups, at most four levels deep. */
const RuleGroup = t.Object({
  type: t.Union([t.Literal('and'), t.Literal('or')]),
  rules: t.Array(t.Unknown({ description: 'a rule or a nested group' }), { minItems: 1, maxItems: MAX_RULES }),
})
export const Rule = t.Union([RuleLeaf, RuleGroup], { error: 'must be a rule `{field, operator, value}` or a group `{type: "and" | "or", rules: [...]}`' })
export type RuleLeaf = Static<typeof RuleLeaf>
export type Rule = Static<typeof Rule>

/** A value read from the run's data when the step runs. */
export const VarRef = t.Object({ var: FieldPath }, { description: '`{"var": "event.plan"}`: the value of that field when the step runs' })
export type VarRef = Static<typeof VarRef>

const Scalar = t.Union([t.String({ maxLength: 10_000 }), t.Number(), t.Boolean()])

const step = <Type extends string, C extends Parameters<typeof t.Object>[0]>(type: Type, config: C, description: string) =>
  t.Object({ key: StepKey, type: t.Literal(type), config: t.Object(config) }, { description })

const TriggerStep = step('trigger', { event_name: EventName, filter_rule: t.Optional(Rule) }, 'the first step: which event starts a run for its contact, optionally only when `filter_rule` holds')
const DelayStep = step('delay', { duration: Duration }, 'waits for the duration (at most 30 days)')
const WaitForEventStep = step(
  'wait_for_event',
  { event_name: EventName, timeout: t.Optional(Duration), filter_rule: t.Optional(Rule) },
  'waits until the contact has the event (one whose payload, as `event.<key>`, matches `filter_rule` when given) or the timeout passes (default and maximum 30 days); connect `event_received` and `timeout` (`default` takes either)',
)
const ConditionStep = t.Object(
  { key: StepKey, type: t.Literal('condition'), config: Rule },
  { description: 'branches on a rule over the run’s data: connect `condition_met` and `condition_not_met`' },
)
const SendEmailStep = step(
  'send_email',
  {
    template: t.Object({
      id: t.String({ minLength: 1, maxLength: 100, description: 'a published template’s id or alias (stored as its id)' }),
      variables: t.Optional(t.Record(t.String({ maxLength: 100 }), t.Union([Scalar, VarRef]), { description: 'values, or `{var}` references read when the step runs' })),
    }),
    from: t.Optional(t.String({ maxLength: 1000, description: 'overrides the template’s sender' })),
    subject: t.Optional(t.String({ maxLength: 998, description: 'overrides the template’s subject' })),
    reply_to: t.Optional(t.Union([t.String({ maxLength: 1000 }), t.Array(t.String({ maxLength: 1000 }), { maxItems: 50 })])),
    topic_id: t.Optional(Uuid),
  },
  'sends the published version of a template to the contact, through the same checks as POST /emails; a contact who unsubscribed is skipped',
)
const NullableName = t.Union([t.String({ maxLength: 256 }), t.Null(), VarRef])
const ContactUpdateStep = step(
  'contact_update',
  {
    first_name: t.Optional(NullableName),
    last_name: t.Optional(NullableName),
    unsubscribed: t.Optional(t.Union([t.Boolean(), VarRef])),
    properties: t.Optional(t.Record(t.String({ minLength: 1, maxLength: 100 }), t.Union([Scalar, t.Null(), VarRef]), { description: 'set (a null removes) custom properties' })),
  },
  'changes the contact, as PATCH /contacts/{id} does',
)
const ContactDeleteStep = step('contact_delete', {}, 'deletes the contact')
const AddToSegmentStep = step('add_to_segment', { segment_id: Uuid }, 'adds the contact to a segment')
const WebhookStep = step(
  'webhook',
  {
    url: t.String({ minLength: 1, maxLength: 2000, description: 'https (http and private addresses only where MAILROOM_ALLOW_PRIVATE_WEBHOOKS=true)' }),
    headers: t.Optional(t.Record(t.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9!#$%&\'*+.^_`|~-]+$' }), t.String({ maxLength: 2000 }), { maxProperties: 20 })),
    timeout: t.Optional(Duration),
  },
  'posts the run’s data as JSON to the URL (timeout default 10 seconds, at most 30); tried three times, then the run fails',
)

export const Step = t.Union([TriggerStep, DelayStep, WaitForEventStep, ConditionStep, SendEmailStep, ContactUpdateStep, ContactDeleteStep, AddToSegmentStep, WebhookStep], {
  error: 'must be a step `{key, type, config}` whose config fits its type',
})
export type AutomationStep = Static<typeof Step>
export type StepType = AutomationStep['type']

const ConnectionType = oneOf(['default', 'condition_met', 'condition_not_met', 'event_received', 'timeout'])
export const Connection = t.Object({ from: StepKey, to: StepKey, type: t.Optional(ConnectionType) })
export type Connection = { from: string; to: string; type: Static<typeof ConnectionType> }

const Status = t.Union([t.Literal('enabled'), t.Literal('disabled')])
const Name = t.String({ minLength: 1, maxLength: 200 })
const Steps = t.Array(Step, { minItems: 1, maxItems: MAX_STEPS, description: `one \`trigger\` and up to ${MAX_STEPS - 1} more` })
const Connections = t.Array(Connection, {
  maxItems: MAX_STEPS * 2,
  description: 'the graph’s edges; left out, the steps run in the order given (a condition goes on when met, a wait either way)',
})

export const CreateAutomation = t.Object({
  name: Name,
  status: t.Optional(t.Union([t.Literal('enabled'), t.Literal('disabled')], { description: '`disabled` (the default) or `enabled`' })),
  steps: Steps,
  connections: t.Optional(Connections),
})
export type CreateAutomation = Static<typeof CreateAutomation>

export const UpdateAutomation = t.Object({
  name: t.Optional(Name),
  status: t.Optional(Status),
  steps: t.Optional(Steps),
  connections: t.Optional(Connections),
})
export type UpdateAutomation = Static<typeof UpdateAutomation>

const StepOut = t.Object({ key: t.String(), type: t.String(), config: t.Record(t.String(), t.Unknown()) })
const ConnectionOut = t.Object({ from: t.String(), to: t.String(), type: t.String() })

export const Automation = t.Object({
  object: t.Literal('automation'),
  id: Uuid,
  name: t.String(),
  status: Status,
  version: t.Integer({ description: 'the current version’s number, from 1' }),
  version_id: Uuid,
  steps: t.Array(StepOut),
  connections: t.Array(ConnectionOut),
  created_at: Timestamp,
  updated_at: Timestamp,
})

const AutomationItem = t.Object({
  object: t.Literal('automation'),
  id: Uuid,
  name: t.String(),
  status: Status,
  version: t.Integer(),
  trigger: t.String({ description: 'the event the current version starts on' }),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export const AutomationList = t.Object({ object: t.Literal('list'), data: t.Array(AutomationItem), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListAutomationsQuery = t.Object({ ...Paging.properties, status: t.Optional(Status) })
export type ListAutomationsQuery = Static<typeof ListAutomationsQuery>

const AutomationVersion = t.Object({
  object: t.Literal('automation_version'),
  id: Uuid,
  automation_id: Uuid,
  version: t.Integer(),
  name: t.String(),
  steps: t.Array(StepOut),
  connections: t.Array(ConnectionOut),
  created_at: Timestamp,
})
export const VersionList = t.Object({ object: t.Literal('list'), data: t.Array(AutomationVersion), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })

const RunStatus = oneOf(['running', 'completed', 'failed', 'cancelled'])
const RunFields = {
  object: t.Literal('automation_run'),
  id: Uuid,
  automation_id: Uuid,
  version_id: Uuid,
  version: t.Integer(),
  contact_id: Uuid,
  status: RunStatus,
  trigger: t.Object({ event: t.String(), payload: t.Record(t.String(), t.Unknown()) }),
  current_step: t.Nullable(t.String({ description: 'the step the run is at or waiting on, or where it failed or was cancelled; null once completed' })),
  wake_at: t.Nullable(t.String({ description: 'when the run moves next: a delay’s end, a wait’s timeout, a webhook retry' })),
  started_at: t.Nullable(Timestamp),
  completed_at: t.Nullable(Timestamp),
  created_at: Timestamp,
}
const RunItem = t.Object(RunFields)
const RunStep = t.Object({
  key: t.String(),
  type: t.String(),
  status: oneOf(['waiting', 'completed', 'skipped', 'failed', 'cancelled']),
  attempts: t.Integer(),
  started_at: t.Nullable(Timestamp),
  completed_at: t.Nullable(Timestamp),
  output: t.Nullable(t.Record(t.String(), t.Unknown())),
  error: t.Nullable(t.Object({ code: t.String(), message: t.String() })),
  created_at: Timestamp,
})
export const Run = t.Object({ ...RunFields, steps: t.Array(RunStep, { description: 'the steps the run reached, in order' }) })
export const RunList = t.Object({ object: t.Literal('list'), data: t.Array(RunItem), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListRunsQuery = t.Object({
  ...Paging.properties,
  status: t.Optional(t.String({ maxLength: 100, description: 'comma-separated: `running`, `completed`, `failed`, `cancelled`' })),
})
export type ListRunsQuery = Static<typeof ListRunsQuery>

export const AutomationIdParams = t.Object({ id: Uuid })
export const RunIdParams = t.Object({ id: Uuid, run_id: Uuid })
