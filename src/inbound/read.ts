// Reading a received message (parsing it and checking SPF, DKIM and DMARC) is about
// half of the main thread's work per message, so it runs on a worker thread and the
// main thread keeps the SMTP sessions and the database.
import type { InboundAuth } from '../db/tables'
import { ThreadPool, workerEntry } from '../lib/thread-pool'
import { authenticateMessage, type AuthInput } from './auth'
import { parseMessage, type ParsedInbound } from './parse'

export interface ReadInput {
  raw: Uint8Array
  auth: AuthInput
}

export interface ReadMessage {
  parsed: ParsedInbound
  auth: InboundAuth
}

/** Structured cloning turns Buffers into plain Uint8Arrays: the same bytes as a Buffer again. */
const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength)

/** Parsing (CPU) and authentication (mostly DNS waits) side by side, on this thread. */
export async function readHere(input: ReadInput): Promise<ReadMessage> {
  const raw = asBuffer(input.raw)
  const [parsed, auth] = await Promise.all([parseMessage(raw), authenticateMessage(raw, input.auth)])
  return { parsed, auth }
}

let pool: ThreadPool<ReadInput, ReadMessage> | null = null

/** A message read on a reading thread when there is one (see read-worker.ts). */
export function readMessage(input: ReadInput): Promise<ReadMessage> {
  pool ??= new ThreadPool({
    entry: workerEntry(import.meta.path, new URL('./read-worker.ts', import.meta.url), 'inbound/read-worker.js'),
    here: readHere,
    decode: (m) => ({ ...m, parsed: { ...m.parsed, attachments: m.parsed.attachments.map((a) => ({ ...a, content: asBuffer(a.content) })) } }),
  })
  return pool.run(input)
}
