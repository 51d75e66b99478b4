// The inbound SMTP listener, in the same process as the API: mail for domains with
// receiving on, and bounces and complaints for return-path hosts. Every other
// recipient is refused at RCPT TO, so it is never an open relay.
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server'
import type { RootDeps } from '../deps'
import { TokenBuckets } from '../lib/token-bucket'
import { processPending, receive, routeRecipient, type Route } from './store'
import { tlsMaterial } from './tls'

export interface ListenerStatus {
  status: 'ok' | 'failing'
  port: number
  detail?: string
}

export interface InboundListener {
  readonly port: number
  readonly listening: boolean
  status(): ListenerStatus
  /** Stops accepting, lets sessions in progress end (up to `graceMs`), then closes. */
  close(graceMs?: number): Promise<void>
}

export interface ListenOptions {
  port?: number
  host?: string
}

/** Recipients a session may name per message. */
const MAX_RECIPIENTS = 100

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code })

interface SessionState {
  routes: Map<string, Route>
}

export async function startInbound(root: RootDeps, opts: ListenOptions = {}): Promise<InboundListener> {
  const { config, log } = root
  const tls = tlsMaterial(config)
  const perAddress = new Map<string, number>()
  const counted = new Set<string>()
  const buckets = new TokenBuckets(config.rateLimiterEntries)
  const states = new Map<string, SessionState>()
  let listening = false
  let port = opts.port ?? config.smtpPort
  const stateOf = (s: SMTPServerSession) => {
    let st = states.get(s.id)
    if (!st) states.set(s.id, (st = { routes: new Map() }))
    return st
  }

  const server = new SMTPServer({
    name: config.hostname,
    banner: 'Mailroom ESMTP',
    key: tls.key,
    cert: tls.cert,
    size: config.smtpMaxSize,
    authOptional: true,
    disabledCommands: ['AUTH'],
    logger: false,
    // Nothing reads the client's reverse name (the Received field names its HELO and address),
    // so no PTR query on the system's resolver, of up to 1.5 s, holds up each greeting.
    disableReverseLookup: true,
    maxClients: 1000,
    closeTimeout: 5000,
    socketTimeout: 60_000,
    onConnect(session, cb) {
      const ip = session.remoteAddress
      const n = (perAddress.get(ip) ?? 0) + 1
      if (n > config.smtpMaxConnectionsPerAddress) return cb(smtpError(421, `4.7.0 Too many connections from ${ip}; at most ${config.smtpMaxConnectionsPerAddress} at once`))
      perAddress.set(ip, n)
      counted.add(session.id)
      cb()
    },
    onClose(session) {
      states.delete(session.id)
      if (!counted.delete(session.id)) return
      const n = (perAddress.get(session.remoteAddress) ?? 1) - 1
      if (n <= 0) perAddress.delete(session.remoteAddress)
      else perAddress.set(session.remoteAddress, n)
    },
    onMailFrom(address, session, cb) {
      stateOf(session).routes.clear()
      const declared = address.args && typeof address.args.SIZE === 'string' ? Number(address.args.SIZE) : 0
      if (declared > config.smtpMaxSize) return cb(smtpError(552, `5.3.4 Message size ${declared} exceeds the limit of ${config.smtpMaxSize} bytes`))
      const rate = buckets.take(session.remoteAddress, config.smtpMessagesPerMinute, root.clock.now())
      if (rate.untracked) return cb(smtpError(451, '4.3.2 Too many senders at once to meter; try again in a few seconds'))
      if (!rate.allowed) return cb(smtpError(451, `4.7.1 Too many messages from ${session.remoteAddress}; try again in ${rate.resetSeconds} seconds`))
      cb()
    },
    onRcptTo(address, session, cb) {
      const st = stateOf(session)
      if (st.routes.size >= MAX_RECIPIENTS) return cb(smtpError(452, `4.5.3 Too many recipients; at most ${MAX_RECIPIENTS} per message`))
      routeRecipient(root, address.address).then(
        (route) => {
          if (!route) return cb(smtpError(550, `5.1.1 <${address.address}>: no such recipient here (relaying denied)`))
          st.routes.set(address.address.toLowerCase(), route)
          cb()
        },
        (e) => {
          log.error('inbound recipient check failed', { error: (e as Error).message })
          cb(smtpError(451, '4.3.0 Temporary failure checking the recipient; try again later'))
        },
      )
    },
    onData(stream: SMTPServerDataStream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => {
        if (!stream.sizeExceeded) chunks.push(c)
      })
      stream.on('error', (e) => cb(smtpError(451, `4.3.0 ${e.message}`)))
      stream.on('end', () => {
        if (stream.sizeExceeded) return cb(smtpError(552, `5.3.4 Message exceeds the fixed maximum size of ${config.smtpMaxSize} bytes`))
        const st = stateOf(session)
        const env = {
          remoteAddress: session.remoteAddress,
          helo: session.hostNameAppearsAs || null,
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address || null : null,
          rcptTo: [...st.routes.keys()],
          secure: session.secure,
        }
        receive(root, env, Buffer.concat(chunks), st.routes).then(
          (id) => cb(null, `2.0.0 Ok: queued as ${id}`),
          (e) => {
            log.error('inbound message could not be stored', { error: (e as Error).message })
            cb(smtpError(451, '4.3.0 Temporary storage failure; try again later'))
          },
        )
      })
    },
  })
  server.on('error', (e) => log.error('smtp listener error', { error: (e as Error).message }))

  await new Promise<void>((resolve, reject) => {
    const onError = (e: Error) => reject(e)
    server.server.once('error', onError)
    server.listen(port, opts.host ?? config.smtpHost, () => {
      server.server.off('error', onError)
      const addr = server.server.address()
      if (addr && typeof addr === 'object') port = addr.port
      listening = true
      resolve()
    })
  })
  server.server.on('close', () => (listening = false))
  log.info('smtp listening', { port, host: opts.host ?? config.smtpHost, tls: tls.generated ? 'self-signed' : 'configured' })
  // Messages stored before a stop but not processed yet.
  processPending(root).catch((e) => log.error('pending inbound messages could not be processed', { error: (e as Error).message }))

  return {
    get port() {
      return port
    },
    get listening() {
      return listening
    },
    status: () => (listening ? { status: 'ok', port } : { status: 'failing', port, detail: 'the SMTP listener is not listening' }),
    close: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        server.options.closeTimeout = graceMs
        server.close(() => {
          listening = false
          resolve()
        })
      }),
  }
}
