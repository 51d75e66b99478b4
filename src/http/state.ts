import type { UnitOfWork } from '../db'
import type { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import type { AuthLevel } from './auth'
import type { BucketState } from '../lib/token-bucket'

/** What the platform hooks know about one request, keyed by its Request object. */
export interface RequestState {
  id: string
  start: number
  address: string
  /** A method that may change something (POST, PATCH, PUT, DELETE). */
  write?: boolean
  actor?: Actor
  /** The key's account as soon as the key is known, even when the request is then refused (for the request log). */
  caller?: { accountId: string; keyId: string | null }
  rate?: BucketState
  unit?: UnitOfWork
  /** An Idempotency-Key this request holds while it runs. */
  idem?: { accountId: string; key: string; fingerprint: string }
  /** The route's auth level, set when its auth ran: so onError knows the route matched. */
  level?: AuthLevel
  /** The refusal the reply carries, or the stored reply replayed under an Idempotency-Key (for the request log). */
  error?: AppError
  replayed?: { status: number; body: string }
}

const states = new WeakMap<Request, RequestState>()

export const stateOf = (request: Request) => states.get(request)
export const setState = (request: Request, s: RequestState) => states.set(request, s)
