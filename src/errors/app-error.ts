import type { Tx } from '../db'
import { CATALOGUE, type ErrorCode } from './catalogue'

export interface FieldIssue {
  field: string
  message: string
}

/** The only way code reports a failure to a caller: by naming a catalogue code. */
export class AppError extends Error {
  readonly code: ErrorCode
  readonly details?: FieldIssue[]
  /** Extra members merged into the envelope (for example `agent_action_id`). */
  readonly extra?: Record<string, unknown>
  readonly retryAfter?: number
  readonly headers?: Record<string, string>
  /** Writes that stand although the request fails (a pending agent action, an expiry): run in a transaction of their own after the request's is undone. */
  readonly keep?: (tx: Tx) => Promise<unknown>

  constructor(
    code: ErrorCode,
    opts: { message?: string; details?: FieldIssue[]; extra?: Record<string, unknown>; retryAfter?: number; headers?: Record<string, string>; keep?: (tx: Tx) => Promise<unknown> } = {},
  ) {
    super(opts.message ?? CATALOGUE[code].message)
    this.code = code
    this.details = opts.details
    this.extra = opts.extra
    this.retryAfter = opts.retryAfter
    this.headers = opts.headers
    this.keep = opts.keep
  }

  get status() {
    return CATALOGUE[this.code].status
  }
}

export const notFound = (what: string) => new AppError('not_found', { message: `${what} not found.` })
