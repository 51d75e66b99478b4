// A DKIM signing thread (see SignerPool in dkim.ts): takes an unsigned message and
// the domain's key, answers with the signed message. Keys are parsed once per thread.
import { dkimSignHere, DkimSignError, type SigningDomain } from './dkim'

declare const self: Worker

self.onmessage = async (e: MessageEvent<{ id: number; raw: Uint8Array; domain: SigningDomain }>) => {
  const { id, raw, domain } = e.data
  try {
    const signed = await dkimSignHere(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), domain)
    self.postMessage({ id, signed })
  } catch (err) {
    self.postMessage({ id, error: (err as Error).message, keyError: err instanceof DkimSignError })
  }
}
