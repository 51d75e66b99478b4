// The checkpointing thread (see `Checkpointer` in backend.ts): its own connection
// copies committed pages from the write-ahead log into the database file, with the
// fsyncs that takes, so the event loop never waits for them.
import Libsql from 'libsql'
import type { CheckpointReply, CheckpointRequest } from './backend'

declare const self: Worker

let db: Libsql.Database | undefined

self.onmessage = (e: MessageEvent<CheckpointRequest>) => {
  const m = e.data
  if (m.kind === 'close') {
    db?.close()
    db = undefined
    self.postMessage({ closed: true } satisfies CheckpointReply)
    return
  }
  try {
    if (!db) {
      db = new Libsql(m.path)
      // FULL: the log is synced before its pages are copied, and the file after, whatever the writer's own level.
      db.exec('PRAGMA synchronous = FULL')
      db.exec('PRAGMA busy_timeout = 0')
    }
    // PASSIVE takes no lock a writer or reader waits for: it copies what no reader still needs.
    const r = db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get() as { log: number; checkpointed: number }
    self.postMessage({ log: r.log, checkpointed: r.checkpointed } satisfies CheckpointReply)
  } catch (err) {
    self.postMessage({ error: (err as Error).message } satisfies CheckpointReply)
  }
}
