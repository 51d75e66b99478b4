import type { TemplateValue, TemplateVariable, templateVersions } from '../db/tables'
import { errorFinding, type Finding } from '../emails/content'
import { escapeHtml } from '../lib/html'

/** What a template (its draft or a published version) holds. */
export type TemplateContent = Pick<typeof templateVersions.$inferSelect, 'from' | 'subject' | 'replyTo' | 'html' | 'text' | 'variables'>

export interface Rendered {
  subject: string | null
  html: string
  /** Null when the template opted out of a text part with `text: ''`. */
  text: string | null
}

/**
 * `{{{ KEY }}}` (Resend's form) or `{{ KEY }}`, spaces inside optional. Dots are
 * read too, so `{{{contact.first_name}}}` is reported as undeclared instead of
 * going out as written.
 */
const PLACEHOLDER = /\{\{\{\s*([A-Za-z_][\w.]*)\s*\}\}\}|\{\{\s*([A-Za-z_][\w.]*)\s*\}\}/g

const FIELDS = ['subject', 'html', 'text'] as const

/** The first variable a template's subject, html or text uses without declaring it. */
export function undeclaredUse(c: Pick<TemplateContent, 'subject' | 'html' | 'text' | 'variables'>): { key: string; field: string } | null {
  const declared = new Set(c.variables.map((v) => v.key))
  for (const field of FIELDS) {
    for (const m of (c[field] ?? '').matchAll(PLACEHOLDER)) {
      const key = m[1] ?? m[2]
      if (!declared.has(key)) return { key, field }
    }
  }
  return null
}

/** Whether a value suits a variable: its declared type, and a `string` variable also takes a number. */
export const fitsType = (v: Pick<TemplateVariable, 'type'>, value: TemplateValue) =>
  v.type === 'string' ? typeof value !== 'boolean' : typeof value === v.type && (typeof value !== 'number' || Number.isFinite(value))

/**
 * Each variable's text for this render: the value given, else the fallback.
 * Findings name, under `field`, a value no variable declares, a value of the
 * wrong type, and every required variable left out.
 */
function valuesFor(variables: TemplateVariable[], given: Record<string, TemplateValue>, field: string) {
  const findings: Finding[] = []
  const byKey = new Map(variables.map((v) => [v.key, v]))
  for (const key of Object.keys(given)) {
    if (!byKey.has(key)) {
      const known = variables.length ? `it declares ${variables.map((v) => `\`${v.key}\``).join(', ')}` : 'it declares none'
      findings.push(errorFinding('invalid_parameter', `\`${field}.${key}\` is no variable of the template; ${known}.`, `${field}.${key}`))
    }
  }
  const values = new Map<string, string>()
  const missing: string[] = []
  for (const v of variables) {
    const value = Object.hasOwn(given, v.key) ? given[v.key] : v.fallback_value
    if (value === null) missing.push(v.key)
    else if (!fitsType(v, value)) findings.push(errorFinding('invalid_parameter', `\`${field}.${v.key}\` must be a ${v.type}, as the template declares it; got ${JSON.stringify(value)}.`, `${field}.${v.key}`))
    else values.set(v.key, String(value))
  }
  if (missing.length) {
    const names = missing.map((k) => `\`${k}\``).join(', ')
    findings.push(errorFinding('template_variable_missing', `The template needs ${names} in \`${field}\`: ${missing.length > 1 ? 'they are' : 'it is'} declared without a fallback_value.`, field))
  }
  return { values, findings }
}

const fill = (s: string, values: Map<string, string>, escape: boolean) =>
  s.replace(PLACEHOLDER, (_, triple: string | undefined, double: string | undefined) => {
    const value = values.get(triple ?? double!) ?? ''
    return escape ? escapeHtml(value) : value
  })

let toText: ((html: string) => string) | undefined
/** html-to-text loads on first use: processes that never derive a text part (the delivery worker, for one) never pay for it. */
function htmlToText(html: string) {
  toText ??= (require('html-to-text') as typeof import('html-to-text')).compile({})
  return toText(html)
}

/**
 * Renders subject, html and text with the variables `given`. Values are escaped
 * in the html whichever brace form names them, so no value can add markup; a
 * text left null is derived from the rendered html, and `''` means no text part.
 */
export function renderContent(c: TemplateContent, given: Record<string, TemplateValue>, field: string): { rendered: Rendered; findings: Finding[] } {
  const { values, findings } = valuesFor(c.variables, given, field)
  for (const key of new Set([...(c.subject ?? '').matchAll(PLACEHOLDER)].map((m) => m[1] ?? m[2]))) {
    if (/[\r\n]/.test(values.get(key) ?? '')) findings.push(errorFinding('invalid_parameter', `\`${field}.${key}\` holds a line break and the subject uses it; a subject is one line.`, `${field}.${key}`))
  }
  const html = fill(c.html, values, true)
  const text = c.text === null ? htmlToText(html) : c.text === '' ? null : fill(c.text, values, false)
  return { rendered: { subject: c.subject === null ? null : fill(c.subject, values, false), html, text }, findings }
}
