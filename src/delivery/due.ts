/**
 * Rows written due now (a send, a broadcast's fan-out) wake this process's idle
 * delivery workers, so a transactional email is claimed at once instead of at the
 * worker's next poll (up to `pollMs` later). Workers of other processes on the same
 * database still find the rows at their next poll. Announced inside the writing
 * transaction: a woken worker's claim waits for the write lock, then sees the rows.
 */
const listeners = new Set<() => void>()

/** Calls `fn` whenever rows become due; answers the unsubscribe. */
export function onDue(fn: () => void): () => void {
  listeners.add(fn)
  return () => void listeners.delete(fn)
}

export function announceDue(): void {
  for (const fn of listeners) fn()
}
