export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
}

/** One JSON line per event on stderr, so stdout stays for what a person must read (the first API key). */
export const jsonLogger = (quiet = false): Logger => ({
  info(msg, fields) {
    if (!quiet) console.error(JSON.stringify({ level: 'info', time: new Date().toISOString(), msg, ...fields }))
  },
  error(msg, fields) {
    console.error(JSON.stringify({ level: 'error', time: new Date().toISOString(), msg, ...fields }))
  },
})
