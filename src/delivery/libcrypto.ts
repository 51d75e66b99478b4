// RSA-SHA256 signatures through the system's OpenSSL 3 libcrypto (bun:ffi), when the
// host has one. Bun's node:crypto is BoringSSL, whose RSA-2048 private-key operation
// costs about twice OpenSSL 3's on the same core (0.48 against 0.24 ms of CPU here),
// and a DKIM signature per message is most of what delivery spends on the signing
// thread. Where the library is missing or does not load (another OpenSSL, another
// platform, a compiled binary on a bare host) `systemLibcrypto()` is null and
// signatures are made with node:crypto, which produces the same bytes: PKCS #1 v1.5
// signatures are deterministic.
import { dlopen } from 'bun:ffi'

const SYMBOLS = {
  BIO_new_mem_buf: { args: ['ptr', 'i32'], returns: 'ptr' },
  BIO_free: { args: ['ptr'], returns: 'i32' },
  PEM_read_bio_PrivateKey: { args: ['ptr', 'ptr', 'ptr', 'ptr'], returns: 'ptr' },
  EVP_PKEY_free: { args: ['ptr'], returns: 'void' },
  EVP_PKEY_get_size: { args: ['ptr'], returns: 'i32' },
  EVP_PKEY_get_base_id: { args: ['ptr'], returns: 'i32' },
  EVP_MD_CTX_new: { args: [], returns: 'ptr' },
  EVP_MD_CTX_reset: { args: ['ptr'], returns: 'i32' },
  EVP_sha256: { args: [], returns: 'ptr' },
  EVP_DigestSignInit: { args: ['ptr', 'ptr', 'ptr', 'ptr', 'ptr'], returns: 'i32' },
  EVP_DigestSign: { args: ['ptr', 'ptr', 'ptr', 'ptr', 'u64'], returns: 'i32' },
  ERR_clear_error: { args: [], returns: 'void' },
} as const

/** OpenSSL's id of RSA keys (EVP_PKEY_RSA = NID_rsaEncryption). */
const EVP_PKEY_RSA = 6
const NAMES = process.platform === 'darwin' ? ['libcrypto.3.dylib'] : ['libcrypto.so.3']

/** A private key parsed by libcrypto; freed by `free()` (the key cache does it when the key leaves). */
export interface NativeKey {
  sign(data: Uint8Array): Buffer
  free(): void
}

export interface Libcrypto {
  /** The RSA key of a PEM (PKCS #8 or PKCS #1, unencrypted), or null when libcrypto cannot read it as one. */
  rsaKey(pem: string): NativeKey | null
}

let loaded: Libcrypto | null | undefined

/** The system's libcrypto, loaded once per thread; null when it is not there. */
export function systemLibcrypto(): Libcrypto | null {
  if (loaded === undefined) loaded = open()
  return loaded
}

function open(): Libcrypto | null {
  for (const name of NAMES) {
    try {
      return bind(dlopen(name, SYMBOLS).symbols)
    } catch {
      // Not this name (or no libcrypto 3 at all): node:crypto signs.
    }
  }
  return null
}

function bind(c: ReturnType<typeof dlopen<typeof SYMBOLS>>['symbols']): Libcrypto {
  const ctx = c.EVP_MD_CTX_new()
  const sha256 = c.EVP_sha256()
  if (!ctx || !sha256) throw new Error('libcrypto could not make a digest context')
  // A non-null user pointer is the passphrase: an encrypted key fails instead of prompting on a terminal.
  const noPassphrase = new Uint8Array(1)
  const length = new BigUint64Array(1)
  return {
    rsaKey(pem) {
      const bytes = Buffer.from(pem, 'latin1')
      const bio = c.BIO_new_mem_buf(bytes, bytes.length)
      if (!bio) return null
      let pkey
      try {
        pkey = c.PEM_read_bio_PrivateKey(bio, null, null, noPassphrase)
      } finally {
        c.BIO_free(bio)
      }
      if (!pkey || c.EVP_PKEY_get_base_id(pkey) !== EVP_PKEY_RSA) {
        if (pkey) c.EVP_PKEY_free(pkey)
        c.ERR_clear_error()
        return null
      }
      const key = pkey
      const signature = new Uint8Array(c.EVP_PKEY_get_size(key))
      let freed = false
      return {
        sign(data) {
          if (freed) throw new Error('the key was freed')
          length[0] = BigInt(signature.length)
          // One digest context per thread, reset after each use (a thread signs one message at a time).
          const ok = c.EVP_DigestSignInit(ctx, null, sha256, null, key) === 1 && c.EVP_DigestSign(ctx, signature, length, data, data.length) === 1
          c.EVP_MD_CTX_reset(ctx)
          if (!ok) {
            c.ERR_clear_error()
            throw new Error('libcrypto could not make the signature')
          }
          return Buffer.from(signature.subarray(0, Number(length[0])))
        },
        free() {
          if (freed) return
          freed = true
          c.EVP_PKEY_free(key)
        },
      }
    },
  }
}
