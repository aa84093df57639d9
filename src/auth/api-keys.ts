import { createHash, timingSafeEqual } from 'node:crypto'
import type { AuthConfig } from '../config/access-schema.ts'
import type { Principal } from './principal.ts'

function sha256 (value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

/**
 * Checks a presented API key. Only SHA-256 digests of the configured keys are kept, so a heap dump
 * or a stray inspect() shows no key. The presented token is hashed and compared with every digest:
 * digests have one fixed length (timingSafeEqual never throws, never exits early) and the loop has no
 * early exit, so timing tells neither which key matched nor how much of a wrong one did.
 */
export function createApiKeyVerifier (keys: AuthConfig['apiKeys']): (token: string) => Principal | undefined {
  // Built in one pass from the config; the config's key strings are not referenced by anything kept.
  const digests: readonly Buffer[] = keys.map(k => sha256(k.key))
  const principals: readonly Principal[] = keys.map(k => Object.freeze({ id: k.id, roles: Object.freeze([...k.roles]), via: 'api-key' as const }))
  return (token) => {
    const presented = sha256(token)
    let match = -1
    let i = 0
    for (const digest of digests) {
      if (timingSafeEqual(presented, digest)) match = i
      i++
    }
    return match === -1 ? undefined : principals[match]
  }
}
