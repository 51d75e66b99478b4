import { Value } from '@sinclair/typebox/value'
import { AppError } from '../errors/app-error'
import { DAY } from '../lib/clock'
import { isVarRef } from './rules'
import { RuleLeaf, type AutomationStep, type Connection, type Rule, type StepType } from './schema'

/** Events the service raises itself; custom event names cannot take the `mailroom:` prefix. */
export const SYSTEM_EVENTS = { contactCreated: 'mailroom:contact.created', topicAnswered: 'mailroom:topic.answered' } as const
const SYSTEM_NAMES = new Set<string>(Object.values(SYSTEM_EVENTS))
export const isSystemEvent = (name: string) => SYSTEM_NAMES.has(name)

export const MAX_WAIT_MS = 30 * DAY
const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000
const MAX_WEBHOOK_TIMEOUT_MS = 30_000
const MAX_RULE_DEPTH = 4

/** The connection types a step of each type may start; a wait's `default` is taken on either outcome. */
const OUTGOING: Record<StepType, Connection['type'][]> = {
  trigger: ['default'],
  delay: ['default'],
  wait_for_event: ['event_received', 'timeout', 'default'],
  condition: ['condition_met', 'condition_not_met'],
  send_email: ['default'],
  contact_update: ['default'],
  contact_delete: ['default'],
  add_to_segment: ['default'],
  webhook: ['default'],
}

const invalid = (field: string, message: string) => new AppError('invalid_parameter', { message: `\`${field}\` ${message}.`, details: [{ field, message }] })

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: DAY, w: 7 * DAY }
const UNIT_NAMES: Record<string, string> = {
  s: 's', sec: 's', secs: 's', second: 's', seconds: 's',
  m: 'm', min: 'm', mins: 'm', minute: 'm', minutes: 'm',
  h: 'h', hr: 'h', hrs: 'h', hour: 'h', hours: 'h',
  d: 'd', day: 'd', days: 'd',
  w: 'w', wk: 'w', wks: 'w', week: 'w', weeks: 'w',
}

/** Milliseconds in a duration such as `3 days` or `1 day 6 hours`, between one second and `max`. */
export function parseDuration(text: string, field: string, max = MAX_WAIT_MS): number {
  const parts = text.trim().toLowerCase().split(/\s*(?:,|\band\b)\s*|\s+(?=\d)/).filter(Boolean)
  let ms = 0
  for (const part of parts) {
    const m = part.match(/^(\d+(?:\.\d+)?)\s*([a-z]+)$/)
    const unit = m && UNIT_NAMES[m[2]]
    if (!m || !unit) throw invalid(field, `must be a duration such as \`30 minutes\`, \`12 hours\` or \`3 days\`, not "${text}"`)
    ms += Number(m[1]) * UNITS[unit]
  }
  if (!parts.length) throw invalid(field, 'must be a duration such as `30 minutes`, `12 hours` or `3 days`')
  if (ms < 1000) throw invalid(field, 'must be at least one second')
  if (ms > max) throw invalid(field, `must be at most ${max >= DAY ? `${max / DAY} days` : `${max / 1000} seconds`}`)
  return Math.round(ms)
}

/** Waits and webhook timeouts in milliseconds, read from a saved step (its duration was checked when it was saved). */
export function waitOf(step: Extract<AutomationStep, { type: 'wait_for_event' }>) {
  return step.config.timeout === undefined ? MAX_WAIT_MS : parseDuration(step.config.timeout, 'timeout')
}
export function webhookTimeoutOf(step: Extract<AutomationStep, { type: 'webhook' }>) {
  return step.config.timeout === undefined ? DEFAULT_WEBHOOK_TIMEOUT_MS : parseDuration(step.config.timeout, 'timeout', MAX_WEBHOOK_TIMEOUT_MS)
}

/** Field paths a rule or reference reads: `wait_events.<name>.` must name an event some wait step waits for. */
function checkPath(path: string, field: string, waitNames: string[]) {
  if (!path.startsWith('wait_events.')) return
  const tail = path.slice('wait_events.'.length)
  if (!waitNames.some((n) => tail === n || tail.startsWith(`${n}.`))) {
    const known = waitNames.length ? `the waits here receive ${waitNames.map((n) => `\`${n}\``).join(', ')}` : 'no step here waits for an event'
    throw invalid(field, `reads \`${path}\`, but ${known}`)
  }
}

function checkRule(rule: unknown, field: string, waitNames: string[], depth = 1): asserts rule is Rule {
  if (depth > MAX_RULE_DEPTH) throw invalid(field, `nests rules more than ${MAX_RULE_DEPTH} levels deep`)
  const r = rule as { type?: unknown; rules?: unknown }
  if (r && typeof r === 'object' && (r.type === 'and' || r.type === 'or')) {
    if (!Array.isArray(r.rules) || !r.rules.length) throw invalid(`${field}.rules`, 'must hold at least one rule')
    r.rules.forEach((x, i) => checkRule(x, `${field}.rules[${i}]`, waitNames, depth + 1))
    return
  }
  if (!Value.Check(RuleLeaf, rule)) {
    const issue = [...Value.Errors(RuleLeaf, rule)][0]
    const at = issue?.path ? `${field}${issue.path.replace(/\//g, '.')}` : field
    throw new AppError('validation_error', {
      message: `Invalid \`${at}\`: must be a rule \`{field, operator, value}\` or a group \`{type: "and" | "or", rules}\`.`,
      details: [{ field: at, message: issue?.message ?? 'must be a rule or a group' }],
    })
  }
  const leaf = rule as RuleLeaf
  if (leaf.operator !== 'exists' && leaf.operator !== 'is_empty' && leaf.value === undefined) throw invalid(`${field}.value`, `is required with the \`${leaf.operator}\` operator`)
  checkPath(leaf.field, `${field}.field`, waitNames)
}

function checkRefs(values: Record<string, unknown> | undefined, field: string, waitNames: string[]) {
  for (const [k, v] of Object.entries(values ?? {})) if (isVarRef(v)) checkPath(v.var, `${field}.${k}.var`, waitNames)
}

/** Checks one step's config beyond its schema: durations, rules, references, a webhook URL. */
function checkStep(step: AutomationStep, at: string, waitNames: string[], urlProblem: (url: string) => string | null) {
  switch (step.type) {
    case 'trigger':
      if (step.config.filter_rule) checkRule(step.config.filter_rule, `${at}.config.filter_rule`, [])
      return
    case 'delay':
      parseDuration(step.config.duration, `${at}.config.duration`)
      return
    case 'wait_for_event':
      if (step.config.timeout !== undefined) parseDuration(step.config.timeout, `${at}.config.timeout`)
      if (step.config.filter_rule) checkRule(step.config.filter_rule, `${at}.config.filter_rule`, waitNames)
      return
    case 'condition':
      checkRule(step.config, `${at}.config`, waitNames)
      return
    case 'send_email':
      checkRefs(step.config.template.variables, `${at}.config.template.variables`, waitNames)
      return
    case 'contact_update': {
      const c = step.config
      if (c.first_name === undefined && c.last_name === undefined && c.unsubscribed === undefined && c.properties === undefined) {
        throw invalid(`${at}.config`, 'must change something: `first_name`, `last_name`, `unsubscribed` or `properties`')
      }
      checkRefs({ first_name: c.first_name, last_name: c.last_name, unsubscribed: c.unsubscribed }, `${at}.config`, waitNames)
      checkRefs(c.properties, `${at}.config.properties`, waitNames)
      return
    }
    case 'webhook': {
      const problem = urlProblem(step.config.url)
      if (problem) throw invalid(`${at}.config.url`, problem)
      if (step.config.timeout !== undefined) parseDuration(step.config.timeout, `${at}.config.timeout`, MAX_WEBHOOK_TIMEOUT_MS)
      return
    }
  }
}

/** Without connections the steps run in the order given: a condition goes on when met, a wait on either outcome. */
function chain(steps: AutomationStep[]): Connection[] {
  return steps.slice(1).map((s, i) => ({ from: steps[i].key, to: s.key, type: steps[i].type === 'condition' ? 'condition_met' : 'default' }))
}

/** Every step is reached from the trigger, and no path comes back to a step it passed: each run ends. */
function checkShape(steps: AutomationStep[], connections: Connection[], trigger: string) {
  const next = new Map<string, string[]>()
  for (const c of connections) next.set(c.from, [...(next.get(c.from) ?? []), c.to])
  const state = new Map<string, 'open' | 'done'>()
  const visit = (key: string, path: string[]) => {
    if (state.get(key) === 'done') return
    if (state.get(key) === 'open') throw invalid('connections', `make a loop (${[...path.slice(path.indexOf(key)), key].join(' → ')}); a run must end`)
    state.set(key, 'open')
    for (const to of next.get(key) ?? []) visit(to, [...path, key])
    state.set(key, 'done')
  }
  visit(trigger, [])
  const unreached = steps.find((s) => !state.has(s.key))
  if (unreached) throw invalid('connections', `leave step \`${unreached.key}\` unreachable from the trigger`)
}

export interface Graph {
  steps: AutomationStep[]
  connections: Connection[]
  trigger: Extract<AutomationStep, { type: 'trigger' }>
}

/**
 * Checks a graph as given (Resend's `steps` and `connections`) and returns it with
 * every connection's type filled in. Connections left out make the steps a chain.
 */
export function readGraph(steps: AutomationStep[], given: Partial<Connection>[] | undefined, urlProblem: (url: string) => string | null): Graph {
  const byKey = new Map<string, AutomationStep>()
  steps.forEach((s, i) => {
    if (byKey.has(s.key)) throw invalid(`steps[${i}].key`, `repeats the key \`${s.key}\`; keys are unique in an automation`)
    byKey.set(s.key, s)
  })
  const triggers = steps.filter((s): s is Graph['trigger'] => s.type === 'trigger')
  if (triggers.length !== 1) throw invalid('steps', `must hold exactly one \`trigger\` step, not ${triggers.length}`)
  const trigger = triggers[0]
  const waitNames = [...new Set(steps.flatMap((s) => (s.type === 'wait_for_event' ? [s.config.event_name] : [])))]
  steps.forEach((s, i) => checkStep(s, `steps[${i}]`, waitNames, urlProblem))

  const connections: Connection[] = given ? given.map((c) => ({ from: c.from!, to: c.to!, type: c.type ?? 'default' })) : chain(steps)
  const seen = new Set<string>()
  connections.forEach((c, i) => {
    const at = `connections[${i}]`
    const from = byKey.get(c.from)
    if (!from) throw invalid(`${at}.from`, `names no step: \`${c.from}\``)
    if (!byKey.has(c.to)) throw invalid(`${at}.to`, `names no step: \`${c.to}\``)
    if (c.to === trigger.key) throw invalid(`${at}.to`, 'leads back to the trigger; a trigger only starts runs')
    if (!OUTGOING[from.type].includes(c.type)) {
      throw invalid(`${at}.type`, `cannot leave a \`${from.type}\` step as \`${c.type}\`; it takes ${OUTGOING[from.type].map((t) => `\`${t}\``).join(', ')}`)
    }
    const edge = `${c.from}\n${c.type}`
    if (seen.has(edge)) throw invalid(`${at}`, `is a second \`${c.type}\` connection from \`${c.from}\`; a run takes one way`)
    seen.add(edge)
  })
  checkShape(steps, connections, trigger.key)
  return { steps, connections, trigger }
}

/** The outcomes a step ends with; the connection taken is the one of that type, then (for waits) `default`. */
export type Outcome = Connection['type']

/** The step after `from` for `outcome`, or null: the run ends there. */
export function nextStep(connections: Connection[], from: string, outcome: Outcome): string | null {
  const out = connections.filter((c) => c.from === from)
  return (out.find((c) => c.type === outcome) ?? (outcome === 'event_received' || outcome === 'timeout' ? out.find((c) => c.type === 'default') : undefined))?.to ?? null
}
