import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import pino from 'pino'
import type { Logger } from 'pino'
import { Secret } from '../../../../src/auth/secret.ts'
import type { Grant } from '../../../../src/credentials/vault/token-vault.ts'

/** A fresh AES-256 key, base64, as tokens.encryptionKey takes it. */
export function newKey (): string {
  return randomBytes(32).toString('base64')
}

/** A grant whose tokens are unique strings a test can search for. */
export function grantWith (label: string, extra: Partial<Grant> = {}): Grant {
  return {
    accessToken: new Secret(`at-${label}-${randomBytes(6).toString('hex')}`),
    refreshToken: new Secret(`rt-${label}-${randomBytes(6).toString('hex')}`),
    tokenType: 'Bearer',
    expiresAt: 1_900_000_000_000,
    scope: 'repo read:user',
    obtainedAt: 1_800_000_000_000,
    type: 'oauth',
    ...extra
  }
}

/** A logger whose lines a test reads as data. */
export function capturingLog (): { log: Logger, lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  return { log: pino({ level: 'debug' }, stream), lines }
}

export async function bounded<T> (promise: Promise<T>, what: string, boundMs = 3000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what} took over ${boundMs} ms`)) }, boundMs) })
  try {
    return await Promise.race([promise, bound])
  } finally {
    clearTimeout(timer)
  }
}
