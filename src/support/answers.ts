import bounces from './answers/bounces.md' with { type: 'text' }
import dnsRecords from './answers/dns-records.md' with { type: 'text' }
import gettingStarted from './answers/getting-started.md' with { type: 'text' }
import limits from './answers/limits.md' with { type: 'text' }

/** A published answer: shipped inside the binary as markdown, so every deployment has the same ones. */
export interface Answer {
  slug: string
  title: string
  summary: string
  body: string
}

function parse(slug: string, text: string): Answer {
  const [first, ...rest] = text.trim().split('\n')
  const body = rest.join('\n').trim()
  const summary = body.split(/\n\s*\n/).find((p) => !p.startsWith('#')) ?? ''
  return { slug, title: first.replace(/^#\s*/, ''), summary: summary.replace(/\s+/g, ' '), body }
}

export const ANSWERS: Answer[] = [
  parse('getting-started', gettingStarted),
  parse('dns-records', dnsRecords),
  parse('bounces', bounces),
  parse('limits', limits),
]

const STOP = new Set(['a', 'an', 'and', 'are', 'at', 'be', 'by', 'can', 'do', 'for', 'how', 'i', 'in', 'is', 'it', 'my', 'of', 'on', 'or', 'the', 'to', 'what', 'when', 'why', 'with', 'you', 'your'])

/** Lower-case words without their plural or verb endings, so "bounced" finds "bounces". */
export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => !STOP.has(w)).map(stem)
}

function stem(w: string) {
  if (w.length > 4 && w.endsWith('ies')) return w.slice(0, -3) + 'y'
  for (const suffix of ['ing', 'ed', 'es', 's']) if (w.length > suffix.length + 2 && w.endsWith(suffix)) return w.slice(0, -suffix.length)
  return w
}

interface Indexed {
  answer: Answer
  title: Map<string, number>
  body: Map<string, number>
  length: number
}

const counts = (ws: string[]) => ws.reduce((m, w) => m.set(w, (m.get(w) ?? 0) + 1), new Map<string, number>())

const INDEX: Indexed[] = ANSWERS.map((answer) => {
  const body = terms(answer.body)
  return { answer, title: counts(terms(answer.title)), body: counts(body), length: body.length }
})
const AVG_LENGTH = INDEX.reduce((n, d) => n + d.length, 0) / INDEX.length
/** A word in the title counts as this many in the body. */
const TITLE_WEIGHT = 3
const K1 = 1.2
const B = 0.75

/**
 * BM25 over title and body (the title's words weighed three times), so rare words
 * decide more than common ones and a long answer does not win by length alone.
 * Answers sharing no word with the query are left out.
 */
export function searchAnswers(query: string): { answer: Answer; score: number }[] {
  const qs = [...new Set(terms(query))]
  const scored = INDEX.map((d) => {
    let score = 0
    for (const q of qs) {
      const tf = (d.title.get(q) ?? 0) * TITLE_WEIGHT + (d.body.get(q) ?? 0)
      if (!tf) continue
      const df = INDEX.filter((x) => x.title.has(q) || x.body.has(q)).length
      const idf = Math.log(1 + (INDEX.length - df + 0.5) / (df + 0.5))
      score += (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * d.length) / AVG_LENGTH))
    }
    return { answer: d.answer, score: Math.round(score * 1000) / 1000 }
  })
  return scored.filter((s) => s.score > 0).sort((a, b) => b.score - a.score || a.answer.slug.localeCompare(b.answer.slug))
}

export const answerBySlug = (slug: string) => ANSWERS.find((a) => a.slug === slug)
