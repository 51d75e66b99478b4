import libmime from 'libmime'

export interface MimeNode {
  content_type: string
  headers: { name: string; value: string }[]
  size: number
  body_size: number
  charset?: string
  encoding?: string
  disposition?: string
  filename?: string
  content_id?: string
  parts?: MimeNode[]
}

function headerEnd(buf: Buffer): { headers: number; body: number } {
  const crlf = buf.indexOf('\r\n\r\n')
  const lf = buf.indexOf('\n\n')
  if (crlf >= 0 && (lf < 0 || crlf <= lf)) return { headers: crlf, body: crlf + 4 }
  if (lf >= 0) return { headers: lf, body: lf + 2 }
  return { headers: buf.length, body: buf.length }
}

/** Header lines unfolded, in order, as sent. */
function readHeaders(text: string) {
  const out: { name: string; value: string }[] = []
  for (const line of text.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length) out[out.length - 1].value += ' ' + line.trim()
    else {
      const i = line.indexOf(':')
      if (i > 0) out.push({ name: line.slice(0, i).trim(), value: line.slice(i + 1).trim() })
    }
  }
  return out
}

/** The body parts between `--boundary` lines (preamble and epilogue dropped). */
function splitParts(body: Buffer, boundary: string): Buffer[] {
  const parts: Buffer[] = []
  const delim = `--${boundary}`
  let pos = body.indexOf(delim)
  while (pos >= 0) {
    const lineEnd = body.indexOf('\n', pos)
    if (body.subarray(pos + delim.length, pos + delim.length + 2).toString() === '--' || lineEnd < 0) break
    const start = lineEnd + 1
    let next = body.indexOf(`\n${delim}`, start)
    if (next < 0) break
    const end = body[next - 1] === 0x0d ? next - 1 : next
    parts.push(body.subarray(start, end))
    pos = next + 1
  }
  return parts
}

/** Walks a raw RFC 5322 message into its MIME tree: every part's headers, type and sizes. */
export function mimeTree(raw: Buffer): MimeNode {
  const { headers: hEnd, body: bStart } = headerEnd(raw)
  const rawHeaders = readHeaders(raw.subarray(0, hEnd).toString('utf8'))
  // Encoded words decoded for reading; parameters are parsed from the value as sent.
  const headers = rawHeaders.map((h) => ({ name: h.name, value: libmime.decodeWords(h.value) }))
  const get = (n: string) => rawHeaders.find((h) => h.name.toLowerCase() === n)?.value
  const type = libmime.parseHeaderValue(get('content-type') ?? 'text/plain; charset=us-ascii')
  const contentType = String(type.value || 'text/plain').toLowerCase()
  const body = raw.subarray(bStart)
  const node: MimeNode = { content_type: contentType, headers, size: raw.length, body_size: body.length }
  if (type.params.charset) node.charset = type.params.charset.toLowerCase()
  const encoding = get('content-transfer-encoding')
  if (encoding) node.encoding = encoding.toLowerCase()
  const disposition = get('content-disposition')
  if (disposition) {
    const d = libmime.parseHeaderValue(disposition)
    node.disposition = String(d.value).toLowerCase()
    if (d.params.filename) node.filename = libmime.decodeWords(d.params.filename)
  }
  if (!node.filename && type.params.name) node.filename = libmime.decodeWords(type.params.name)
  const cid = get('content-id')
  if (cid) node.content_id = cid.replace(/^<|>$/g, '')
  if (contentType.startsWith('multipart/') && type.params.boundary) node.parts = splitParts(body, type.params.boundary).map(mimeTree)
  return node
}
