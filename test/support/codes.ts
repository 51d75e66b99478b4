import { appendFileSync } from 'node:fs'
import type { ErrorCode } from '../../src/errors/catalogue'

/**
 * Tests that produce an error code note it here; the coverage test reads the file
 * (one code per line) to check that every catalogue code is produced by some test.
 */
export const CODES_FILE = process.env.MAILROOM_CODES_FILE ?? '/tmp/mailroom-produced-codes.txt'

export function recordCode(code: ErrorCode) {
  appendFileSync(CODES_FILE, `${code}\n`)
}
