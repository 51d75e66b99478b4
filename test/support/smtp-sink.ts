// An in-process SMTP server on 127.0.0.1 that records what reaches it: the mail
// our MTA delivers in tests lands here.
//
//   const sink = await startSmtpSink({ auth: { user: 'u', pass: 'p' } })
//   sink.failNext(1, '451 4.7.1 Greylisted, retry in 120 seconds')   // then accept
//   await sink.stop(); … await sink.restart()                          // down, then up on the same port
//   sink.messages[0].raw                                               // the bytes as received
//
// STARTTLS is offered (smtp-server's built-in self-signed certificate) unless
// `starttls: false`; `secure: true` speaks TLS from the first byte (smtps).
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server'

export interface SinkMessage {
  from: string
  to: string[]
  raw: Buffer
  /** Whether the session was encrypted (STARTTLS or smtps). */
  secure: boolean
  /** The AUTH user, when the client logged in. */
  user?: string
  /** The EHLO name the client gave. */
  helo: string
  /** The address the client connected from (a dedicated IP binds its source address). */
  remoteAddress: string
  /** When the sink answered 250 to it (ms since the epoch). */
  at: number
}

export interface SinkOptions {
  starttls?: boolean
  secure?: boolean
  /** Require AUTH PLAIN/LOGIN with these credentials. */
  auth?: { user: string; pass: string }
  /** Listen on this port (default: a free one). */
  port?: number
  /** Holds each 250 reply to DATA this long (a slow server: the message is stored only when the reply is sent). */
  dataDelayMs?: number
}

export interface SmtpSink {
  readonly port: number
  readonly host: string
  readonly messages: SinkMessage[]
  /** Connections accepted so far (connection reuse shows as fewer connections than messages). */
  readonly connections: number
  /** Replies seen so far that were failures we injected. */
  readonly rejected: number
  /** Messages whose data has arrived and whose reply is being held (dataDelayMs). */
  readonly holding: number
  /** Answers `reply` (e.g. "451 4.7.1 Try later") to the next `n` messages, at RCPT TO (default) or at the end of DATA. */
  failNext(n: number, reply: string, stage?: 'rcpt' | 'data'): void
  /** Answers `reply` at RCPT TO for this one address, every time. */
  failAddress(address: string, reply: string): void
  /** A relay URL for this sink (smtp:// or smtps://, with the credentials, not verifying the self-signed certificate). */
  url(): string
  /** Stops listening and drops open connections: the port refuses connections until restart(). */
  stop(): Promise<void>
  /** Listens again on the same port. */
  restart(): Promise<void>
  /** Resolves once `count` messages have arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

function smtpError(reply: string): Error & { responseCode: number } {
  const m = reply.match(/^(\d{3})[ -]?(.*)$/)
  const err = new Error(m ? m[2] : reply) as Error & { responseCode: number }
  err.responseCode = m ? Number(m[1]) : 451
  return err
}

export async function startSmtpSink(opts: SinkOptions = {}): Promise<SmtpSink> {
  const messages: SinkMessage[] = []
  let connections = 0
  let rejected = 0
  let holding = 0
  let failures: { n: number; reply: string; stage: 'rcpt' | 'data' } = { n: 0, reply: '', stage: 'rcpt' }
  const failAddresses = new Map<string, string>()
  const waiters: { count: number; resolve: () => void }[] = []
  let server: SMTPServer | null = null
  let port = opts.port ?? 0
  const sockets = new Set<import('node:net').Socket>()

  const take = (stage: 'rcpt' | 'data') => {
    if (failures.n > 0 && failures.stage === stage) {
      failures.n--
      rejected++
      return smtpError(failures.reply)
    }
    return null
  }

  const options: SMTPServerOptions = {
    secure: !!opts.secure,
    authOptional: !opts.auth,
    allowInsecureAuth: true,
    disabledCommands: [...(opts.starttls === false ? ['STARTTLS'] : []), ...(opts.auth ? [] : ['AUTH'])],
    logger: false,
    closeTimeout: 50,
    size: 50 * 1024 * 1024,
    onConnect(_session, cb) {
      connections++
      cb()
    },
    onAuth(auth, _session, cb) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) return cb(null, { user: auth.username })
      cb(smtpError('535 5.7.8 Authentication credentials invalid'))
    },
    onRcptTo(address, _session, cb) {
      const forAddress = failAddresses.get(address.address.toLowerCase())
      if (forAddress) {
        rejected++
        return cb(smtpError(forAddress))
      }
      cb(take('rcpt'))
    },
    onData(stream, session: SMTPServerSession, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const failure = take('data')
        if (failure) return cb(failure)
        if (opts.dataDelayMs) {
          holding++
          setTimeout(() => {
            holding--
            accept(session, chunks, cb)
          }, opts.dataDelayMs)
        } else accept(session, chunks, cb)
      })
    },
  }

  function accept(session: SMTPServerSession, chunks: Buffer[], cb: (err?: Error | null, message?: string) => void) {
    messages.push({
      from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
      to: session.envelope.rcptTo.map((r) => r.address),
      raw: Buffer.concat(chunks),
      secure: !!session.secure,
      user: typeof session.user === 'string' ? session.user : undefined,
      helo: session.hostNameAppearsAs,
      remoteAddress: session.remoteAddress,
      at: Date.now(),
    })
    for (const w of [...waiters]) {
      if (messages.length >= w.count) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve()
      }
    }
    cb(null, 'OK: queued as sink-' + messages.length)
  }

  async function listen() {
    const s = new SMTPServer(options)
    s.on('error', () => {})
    const net = (s as unknown as { server: import('node:net').Server }).server
    net.on('connection', (sock: import('node:net').Socket) => {
      sockets.add(sock)
      sock.on('close', () => sockets.delete(sock))
    })
    await new Promise<void>((resolve, reject) => {
      net.once('error', reject)
      s.listen(port, '127.0.0.1', () => {
        net.off('error', reject)
        resolve()
      })
    })
    port = (net.address() as import('node:net').AddressInfo).port
    server = s
  }

  async function stop() {
    const s = server
    server = null
    if (!s) return
    for (const sock of sockets) sock.destroy()
    sockets.clear()
    await new Promise<void>((resolve) => s.close(() => resolve()))
  }

  await listen()

  return {
    get port() {
      return port
    },
    host: '127.0.0.1',
    messages,
    get connections() {
      return connections
    },
    get rejected() {
      return rejected
    },
    get holding() {
      return holding
    },
    failNext(n, reply, stage = 'rcpt') {
      failures = { n, reply, stage }
    },
    failAddress(address, reply) {
      failAddresses.set(address.toLowerCase(), reply)
    },
    url() {
      const cred = opts.auth ? `${encodeURIComponent(opts.auth.user)}:${encodeURIComponent(opts.auth.pass)}@` : ''
      return `${opts.secure ? 'smtps' : 'smtp'}://${cred}127.0.0.1:${port}?tls.rejectUnauthorized=false`
    },
    stop,
    restart: listen,
    waitFor(count, timeoutMs = 10_000) {
      if (messages.length >= count) return Promise.resolve()
      return new Promise<void>((resolve, reject) => {
        const w = { count, resolve }
        waiters.push(w)
        setTimeout(() => {
          const i = waiters.indexOf(w)
          if (i >= 0) {
            waiters.splice(i, 1)
            reject(new Error(`smtp-sink: ${messages.length} of ${count} messages after ${timeoutMs} ms`))
          }
        }, timeoutMs)
      })
    },
    close: stop,
  }
}
