// The synchronous build of a composed message gives the bytes MailComposer's own
// stream build gives, byte for byte, over the shapes we send and random content.
import { expect, test } from 'bun:test'
import MailComposer from 'nodemailer/lib/mail-composer'
import { buildNow } from '../src/delivery/mime-build'

/** A deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Text that exercises the encoders: long lines, trailing blanks, lone CR and LF, dots, non-ASCII, tabs. */
function text(rnd: () => number, length: number) {
  const pieces = ['a', 'word ', ' ', '\t', '\r\n', '\n', '\r', '.', '=', 'é', 'ü', '日本', '😀', 'x'.repeat(90), ' \r\n', '\t\n', '-- \r\n', 'https://example.com/a?b=c&d=e']
  let s = ''
  while (s.length < length) s += pieces[Math.floor(rnd() * pieces.length)]
  return s
}

type Options = ConstructorParameters<typeof MailComposer>[0]

async function same(options: Options) {
  const node = new MailComposer({ disableFileAccess: true, disableUrlAccess: true, newline: 'win', ...options }).compile()
  const now = buildNow(node)
  expect(now).not.toBeNull()
  const streamed = await node.build()
  expect(now!.toString('latin1')).toBe(streamed.toString('latin1'))
}

const base = { from: 'Acme <hello@acme.test>', to: ['someone@example.net'], subject: 'Your sign-in link', date: new Date('2026-03-02T10:00:00Z'), messageId: '<m1@mta.mailroom.test>' }

test('the shapes we send: text, HTML, both, attachments, inline images, headers', async () => {
  await same({ ...base, text: 'Hello from the benchmark. '.repeat(8) })
  await same({ ...base, html: '<p>Hello <b>there</b></p>' })
  await same({ ...base, text: 'Hello there', html: '<p>Hello <b>there</b></p>' })
  await same({ ...base, text: '', html: '' })
  await same({ ...base, subject: 'Grüße aus Köln — 日本語 😀', text: 'Grüße\r\nZeile zwei' + ' lang'.repeat(40) })
  await same({
    ...base,
    cc: ['A <a@example.org>', 'b@example.org'],
    replyTo: ['Support <support@acme.test>'],
    inReplyTo: '<earlier@acme.test>',
    references: '<first@acme.test> <earlier@acme.test>',
    headers: [
      { key: 'X-Entity-Ref-ID', value: '123' },
      { key: 'List-Unsubscribe', value: { prepared: true, foldLines: true, value: '<https://mailroom.test/unsubscribe/abc>, <mailto:unsubscribe@send.acme.test?subject=unsubscribe%3Aabc>' } },
      { key: 'List-Unsubscribe-Post', value: { prepared: true, foldLines: true, value: 'List-Unsubscribe=One-Click' } },
    ] as never,
    text: 'Hello',
    html: '<p>Hello</p>',
  })
  await same({
    ...base,
    text: 'See attached',
    html: '<p>Logo: <img src="cid:logo@acme"></p>',
    attachments: [
      { filename: 'report.pdf', content: Buffer.from('%PDF-1.4 ' + 'x'.repeat(500)), contentType: 'application/pdf', contentDisposition: 'attachment' },
      { filename: 'logo.png', content: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3]), contentType: 'image/png', cid: 'logo@acme', contentDisposition: 'inline' },
      { filename: 'notes.txt', content: Buffer.from('line one\nline two\r\nünïcödé\n'), contentType: 'text/plain', contentDisposition: 'attachment' },
      { filename: 'empty.bin', content: Buffer.alloc(0), contentType: 'application/octet-stream', contentDisposition: 'attachment' },
    ],
  })
})

test('random content through the encoders', async () => {
  for (let seed = 1; seed <= 150; seed++) {
    const rnd = random(seed)
    const pick = rnd()
    const body = text(rnd, Math.floor(rnd() * 3000))
    const options: Options = pick < 0.33 ? { ...base, text: body } : pick < 0.66 ? { ...base, html: `<div>${body}</div>` } : { ...base, text: body, html: `<p>${body}</p>` }
    if (rnd() < 0.3) options.attachments = [{ filename: 'a.txt', content: Buffer.from(text(rnd, 400)), contentType: 'text/plain' }]
    try {
      await same(options)
    } catch (e) {
      throw new Error(`seed ${seed}: ${(e as Error).message}`)
    }
  }
})

test('what it does not cover is left to the stream build', () => {
  const node = new MailComposer({ ...base, text: 'x', attachments: [{ filename: 'f.txt', path: '/etc/hostname' }], disableFileAccess: true }).compile()
  expect(buildNow(node)).toBeNull()
  expect(buildNow(new MailComposer({ raw: 'Subject: x\r\n\r\nbody\r\n' }).compile())).toBeNull()
})
