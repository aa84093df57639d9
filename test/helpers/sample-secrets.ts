import { createHash, generateKeyPairSync } from 'node:crypto'

// Secret-shaped samples for the guardrail tests, assembled at run time so that no secret-looking
// literal sits in the repository (where scanners would flag it). None of them is a live credential.

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')

/** Deterministic pseudo-random bytes (a SHA-256 chain): tests that need noise see the same noise every run. */
export function noise (bytes: number, seed = 'switchboard'): Buffer {
  const out = Buffer.alloc(bytes)
  let block = createHash('sha256').update(seed).digest()
  for (let at = 0; at < bytes; at += block.length) {
    block.copy(out, at)
    block = createHash('sha256').update(block).digest()
  }
  return out
}

let pem: string | undefined
function privateKeyPem (): string {
  pem ??= generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  return pem
}

export const SAMPLES = {
  /** AWS's own documentation example. */
  aws_access_key: 'AKIA' + 'IOSFODNN7EXAMPLE',
  github_token: 'ghp' + '_' + 'a1B2c3D4'.repeat(4) + 'e5F6',
  github_pat: 'github' + '_pat_' + '11ABCDEFG0' + 'x'.repeat(12) + '_' + 'Yz09'.repeat(14) + 'abc',
  slack_token: ['xox' + 'b', '1234567890', '1234567890123', 'AbCdEfGhIjKlMnOpQrStUvWx'].join('-'),
  jwt: [b64url({ alg: 'HS256', typ: 'JWT' }), b64url({ sub: '1234567890', name: 'Jane', iat: 1516239022 }), noise(32).toString('base64url')].join('.'),
  get private_key (): string { return privateKeyPem() },
  password: 'hunter2-Xy'
} as const

/** The value frozen all the way down: a scan that changed what it was given would throw. */
export function deepFreeze<T> (value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v)
    Object.freeze(value)
  }
  return value
}
