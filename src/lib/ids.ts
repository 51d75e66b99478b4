import type { Clock } from './clock'

export interface Ids {
  /** A UUIDv7: time-ordered, so id order is creation order and serves keyset paging. */
  uuid(): string
}

/**
 * UUIDv7 from the injected clock, with a counter in the random bits so ids made
 * in the same millisecond still sort in creation order.
 */
export function uuidV7(clock: Clock): Ids {
  let lastMs = -1
  let seq = 0
  return {
    uuid() {
      let ms = clock.now()
      if (ms <= lastMs) {
        ms = lastMs
        seq++
        if (seq > 0xfff) {
          ms = ++lastMs
          seq = 0
        }
      } else {
        seq = 0
      }
      lastMs = ms
      const b = crypto.getRandomValues(new Uint8Array(16))
      const hex = ms.toString(16).padStart(12, '0')
      for (let i = 0; i < 6; i++) b[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16)
      b[6] = 0x70 | (seq >> 8)
      b[7] = seq & 0xff
      b[8] = (b[8] & 0x3f) | 0x80
      const h = Buffer.from(b).toString('hex')
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
    },
  }
}

/** The millisecond a UUIDv7 was made at, by the clock that made it. */
export const uuidV7Time = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16)

/** Below every UUIDv7 made at `ms` or later, above every one made before: a time bound on an id column. */
export function uuidV7Floor(ms: number) {
  const hex = ms.toString(16).padStart(12, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8)}-0000-0000-000000000000`
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
export const UUID_RE = new RegExp(UUID_PATTERN)
