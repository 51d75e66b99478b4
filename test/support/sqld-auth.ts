import { generateKeyPairSync, sign } from 'node:crypto'

/** An Ed25519 key pair for sqld's JWT auth: the public half for sqld (SQLD_AUTH_JWT_KEY), a signed token for the client. */
export function jwtAuth() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const input = `${b64({ alg: 'EdDSA', typ: 'JWT' })}.${b64({ a: 'rw' })}`
  return {
    publicKey: publicKey.export({ format: 'jwk' }).x as string,
    token: `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`,
  }
}
