import { createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Config } from '../config'

// Just enough DER (X.690) to write one self-signed X.509 v3 certificate.
function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n])
  const bytes: number[] = []
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff)
  return Buffer.from([0x80 | bytes.length, ...bytes])
}
const tlv = (tag: number, body: Buffer) => Buffer.concat([Buffer.from([tag]), len(body.length), body])
const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items))
function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number)
  const out = [40 * a + b]
  for (const n of rest) {
    const chunk: number[] = []
    let v = n
    do {
      chunk.unshift((v & 0x7f) | (chunk.length ? 0x80 : 0))
      v >>= 7
    } while (v > 0)
    out.push(...chunk)
  }
  return tlv(0x06, Buffer.from(out))
}
function utcTime(d: Date): Buffer {
  const p = (n: number) => String(n).padStart(2, '0')
  const s = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`
  return tlv(0x17, Buffer.from(s))
}
const pem = (label: string, der: Buffer) => `-----BEGIN ${label}-----\n${der.toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`

/** A fresh P-256 key and a self-signed certificate for `host` (and its SAN), valid from an hour ago for ten years. */
export function selfSigned(host: string, now = Date.now()): { key: string; cert: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  const alg = seq(oid('1.2.840.10045.4.3.2')) // ecdsa-with-SHA256
  const name = seq(tlv(0x31, seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(host)))))
  const serial = randomBytes(16)
  serial[0] &= 0x7f
  const san = seq(oid('2.5.29.17'), tlv(0x04, seq(tlv(0x82, Buffer.from(host)))))
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    alg,
    name,
    seq(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + 10 * 365 * 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(0xa3, seq(san)),
  )
  const signature = sign('sha256', tbs, privateKey)
  const cert = seq(tbs, alg, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])))
  return { key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert: pem('CERTIFICATE', cert) }
}

/** The listener's STARTTLS key and certificate: the configured files, else a generated self-signed pair. */
export function tlsMaterial(config: Config): { key: string; cert: string; generated: boolean } {
  if (config.smtpTlsCert && config.smtpTlsKey) {
    const key = readFileSync(config.smtpTlsKey, 'utf8')
    createPrivateKey(key) // fails at start, not at the first STARTTLS
    return { key, cert: readFileSync(config.smtpTlsCert, 'utf8'), generated: false }
  }
  return { ...selfSigned(config.hostname), generated: true }
}
