import type { UnitOfWork } from '../db'
import type { Actor } from '../lib/actor'
import type { BucketState } from '../lib/token-bucket'

/** What the platform hooks know about one request, keyed by its Request object. */
export interface RequestState {
  id: string
  start: number
  address: string
  actor?: Actor
  rate?: BucketState
  unit?: UnitOfWork
  /** An Idempotency-Key this request holds while it runs. */
  idem?: { accountId: string; key: string; fingerprint: string }
  /** Set when a route's auth ran, so onError knows the route matched. */
  matched?: boolean
}

const states = new WeakMap<Request, RequestState>()

export const stateOf = (request: Request) => states.get(request)
export const setState = (request: Request, s: RequestState) => states.set(request, s)
