import type { Clock } from './clock'

export interface Ids {
  /** A UUIDv7: time-ordered, so id order is creation order and serves keyset paging. */
  uuid(): string
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))
// Random bytes drawn a page at a time: a call per id cost more than the rest of the id (every send makes several).
const pool = new Uint8Array(4096)
let drawn = pool.length

/** The offset in `pool` of `n` fresh random bytes, used once. */
function randomBytes(n: number) {
  if (drawn + n > pool.length) {
    crypto.getRandomValues(pool)
    drawn = 0
  }
  drawn += n
  return drawn - n
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
      const t = ms.toString(16).padStart(12, '0')
      const r = randomBytes(8)
      const h = (i: number) => HEX[pool[r + i]]
      // Version 7, the counter's 12 bits, then the variant's two bits over 62 random ones.
      return `${t.slice(0, 8)}-${t.slice(8)}-7${HEX[seq >> 8][1]}${HEX[seq & 0xff]}-${HEX[(pool[r] & 0x3f) | 0x80]}${h(1)}-${h(2)}${h(3)}${h(4)}${h(5)}${h(6)}${h(7)}`
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
