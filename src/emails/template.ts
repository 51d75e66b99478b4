import type { Executor } from '../db'
import { renderContent } from '../templates/render'
import { publishedTemplate } from '../templates/service'
import { errorFinding, type Finding } from './content'
import type { SendEmail } from './schema'

/** The templates one request has looked up, by reference: a batch reads each once. */
export type TemplateCache = Map<string, ReturnType<typeof publishedTemplate>>

export interface Expanded {
  /** The send with the template's fields filled in, and `template` gone. */
  input: SendEmail
  templateId: string | null
  findings: Finding[]
}

/**
 * Fills a send from the published version of its template, as Resend does: the
 * request's own `from`, `subject` and `reply_to` win, the template gives the
 * rest and the bodies; `html` or `text` beside `template` is refused. Findings
 * (an unknown or unpublished template, wrong, unknown or missing variables) come
 * before those of the message itself.
 */
export async function expandTemplate(q: Executor, accountId: string, input: SendEmail, cache: TemplateCache): Promise<Expanded> {
  const { template, ...rest } = input
  if (!template) return { input, templateId: null, findings: [] }
  const ref = template.id
  if ((input.html ?? null) !== null || (input.text ?? null) !== null) {
    return { input: rest, templateId: null, findings: [errorFinding('invalid_parameter', '`template` cannot be combined with `html` or `text`: the template gives the bodies. Leave them out, or send without a template.', 'template')] }
  }
  if (!cache.has(ref)) cache.set(ref, publishedTemplate(q, accountId, ref))
  const found = await cache.get(ref)!
  if (!found) {
    return { input: rest, templateId: null, findings: [errorFinding('invalid_parameter', `\`template.id\` "${ref.slice(0, 100)}" is no template of this account; give a template’s id or alias.`, 'template.id')] }
  }
  const version = found.version
  if (!version) {
    const message = `Template "${found.name}" (${found.id}) has no published version yet; publish it with POST /templates/${found.id}/publish.`
    return { input: rest, templateId: found.id, findings: [errorFinding('template_not_published', message, 'template.id')] }
  }
  const { rendered, findings } = renderContent(version, template.variables ?? {}, 'template.variables')
  return {
    input: {
      ...rest,
      from: input.from ?? version.from ?? undefined,
      subject: input.subject ?? rendered.subject ?? undefined,
      reply_to: input.reply_to ?? (version.replyTo.length ? version.replyTo : undefined),
      html: rendered.html,
      text: rendered.text,
    },
    templateId: found.id,
    findings,
  }
}
