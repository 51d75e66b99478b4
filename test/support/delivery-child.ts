// A second Mailroom instance's delivery worker, as its own process on the same
// database: `bun test/support/delivery-child.ts <clock ms> <batch size>` with the
// instance's environment. Runs one pass over the due rows, prints `{"claimed":N}`.
import { openRoot } from '../../src/boot'
import { loadConfig } from '../../src/config'
import { DeliveryWorker } from '../../src/delivery/worker'
import { ManualClock } from '../../src/lib/clock'

const clock = new ManualClock(Number(process.argv[2]))
const root = await openRoot(loadConfig(process.env), { clock, log: { info() {}, error: (m, f) => console.error(m, JSON.stringify(f)) } })
const worker = new DeliveryWorker(root, { batchSize: Number(process.argv[3] ?? 10), concurrency: 4, id: `child-${process.pid}` })
const claimed = await worker.runOnce()
await worker.stop()
root.db.close()
console.log(JSON.stringify({ claimed }))
