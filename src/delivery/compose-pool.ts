import { ThreadPool, workerEntry } from '../lib/thread-pool'
import { composeHere, type ComposeInput } from './mime'

/**
 * A signed message costs its composition (nodemailer's MailComposer, about 0.2-0.3 ms)
 * and its RSA signature (0.25 ms with the system's libcrypto, 0.5 ms with
 * node:crypto), so both run on worker threads and the main thread keeps the database
 * and the sockets. In a compiled binary the thread's code is `delivery/sign-worker.js`,
 * there when the build lists src/delivery/sign-worker.ts as an entrypoint.
 */
let pool: ThreadPool<ComposeInput, Buffer> | null = null

/** A DKIM-signed message, composed and signed on a composing thread (on this one when none can start). */
export function composeOffThread(input: ComposeInput): Promise<Buffer> {
  pool ??= new ThreadPool<ComposeInput, Buffer>({
    entry: workerEntry(import.meta.path, new URL('./sign-worker.ts', import.meta.url), 'delivery/sign-worker.js'),
    here: composeHere,
    decode: (m) => Buffer.from(m.buffer, m.byteOffset, m.byteLength),
  })
  return pool.run(input)
}
