// A composing thread (see compose-pool.ts): takes a message's rows and answers with
// the composed, DKIM-signed message. Keys are parsed once per thread.
import { serveThread } from '../lib/thread-pool'
import { composeHere, type ComposeInput } from './mime'

serveThread((input: ComposeInput) =>
  composeHere({
    ...input,
    // Structured cloning turns Buffers into plain Uint8Arrays; MailComposer wants Buffers.
    attachments: input.attachments.map((a) => ({ ...a, content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength) })),
  }),
)
