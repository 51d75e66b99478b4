import { AppError } from '../errors/app-error'

export const MB = 1024 * 1024
export const FILE_LIMIT = 10 * MB
export const MESSAGE_LIMIT = 25 * MB
export const FILES_PER_MESSAGE = 5

interface Kind {
  type: string
  /** File name endings this kind may carry; a name without one is fine. */
  extensions: string[]
  matches(b: Buffer): boolean
}

const starts = (b: Buffer, bytes: number[] | string, at = 0) =>
  (typeof bytes === 'string' ? [...Buffer.from(bytes, 'latin1')] : bytes).every((x, i) => b[at + i] === x)

/** What may be attached, told by the bytes themselves: a file named `.png` must be a PNG. */
const BINARY: Kind[] = [
  { type: 'image/png', extensions: ['png'], matches: (b) => starts(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { type: 'image/jpeg', extensions: ['jpg', 'jpeg'], matches: (b) => starts(b, [0xff, 0xd8, 0xff]) },
  { type: 'image/gif', extensions: ['gif'], matches: (b) => starts(b, 'GIF87a') || starts(b, 'GIF89a') },
  { type: 'image/webp', extensions: ['webp'], matches: (b) => starts(b, 'RIFF') && starts(b, 'WEBP', 8) },
  { type: 'application/pdf', extensions: ['pdf'], matches: (b) => starts(b, '%PDF-') },
]

const TEXT_EXTENSIONS: Record<string, string> = { csv: 'text/csv', log: 'text/plain', txt: 'text/plain' }

/**
 * Text is UTF-8 without NUL bytes and with hardly any other control characters
 * (tabs, line ends and form feeds are fine; a log may carry a stray escape).
 */
function isText(b: Buffer) {
  if (b.includes(0)) return false
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(b)
  } catch {
    return false
  }
  const control = text.match(/[\x01-\x08\x0b\x0e-\x1f\x7f]/g)?.length ?? 0
  return control <= text.length / 100
}

const rejected = (filename: string, why: string) =>
  new AppError('support_upload_rejected', { message: `${filename} cannot be attached: ${why}. Attach a screenshot (PNG, JPEG, GIF, WebP), a PDF, a CSV or a plain-text log.` })

/** A MIME type without parameters, lower-case. */
const bare = (t: string) => t.split(';')[0].trim().toLowerCase()

/**
 * The real type of an upload, read from its bytes; the name's ending and any
 * declared type must agree with it, so a renamed executable or an HTML page
 * called `notes.log` is refused.
 */
export function fileType(filename: string, content: Buffer, declared?: string): string {
  if (content.length === 0) throw rejected(filename, 'it is empty')
  const ext = /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase()
  const kind = BINARY.find((k) => k.matches(content))
  let type: string
  if (kind) {
    if (ext && !kind.extensions.includes(ext)) throw rejected(filename, `its bytes are ${kind.type}, which a .${ext} file is not`)
    type = kind.type
  } else if (isText(content)) {
    if (ext && !TEXT_EXTENSIONS[ext]) throw rejected(filename, `only .csv, .log and .txt text files are accepted, not .${ext}`)
    type = TEXT_EXTENSIONS[ext ?? 'txt']
  } else {
    throw rejected(filename, 'its bytes are neither an image, a PDF nor text')
  }
  if (declared && bare(declared) !== type && !(type.startsWith('text/') && bare(declared).startsWith('text/'))) {
    throw rejected(filename, `it was declared ${bare(declared)} but its bytes are ${type}`)
  }
  return type === 'text/plain' || type === 'text/csv' ? `${type}; charset=utf-8` : type
}

/** Decodes base64 strictly: anything that is not base64 is refused rather than silently dropped. */
export function decodeBase64(field: string, content: string): Buffer {
  const clean = content.replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 === 1) {
    throw new AppError('validation_error', { message: `\`${field}\` is not base64.`, details: [{ field, message: 'must be base64' }] })
  }
  return Buffer.from(clean, 'base64')
}
