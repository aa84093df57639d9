import type { Principal } from '../auth/principal.ts'
import { globToRegExp } from '../catalog/naming.ts'

const ROLE_PREFIX = 'role:'

/** Why a principal pattern matched, for `switchboard explain`; undefined when it did not. */
export function matchPrincipal (pattern: string, principal: Principal): string | undefined {
  if (pattern === '*') return '* matches everyone'
  if (pattern.startsWith(ROLE_PREFIX)) {
    const re = globToRegExp(pattern.slice(ROLE_PREFIX.length))
    const role = principal.roles.find(r => re.test(r))
    return role === undefined ? undefined : `${pattern} matches role ${role}`
  }
  return globToRegExp(pattern).test(principal.id) ? `${pattern} matches id ${principal.id}` : undefined
}

/**
 * A compiled list of principal patterns: `*`, an id (glob) or `role:<name>` (glob). Compiled once
 * per rule; the returned predicate runs on every list and call.
 */
export function createPrincipalMatcher (patterns: readonly string[]): (principal: Principal) => boolean {
  if (patterns.includes('*')) return () => true
  const ids: RegExp[] = []
  const roles: RegExp[] = []
  for (const p of patterns) {
    if (p.startsWith(ROLE_PREFIX)) roles.push(globToRegExp(p.slice(ROLE_PREFIX.length)))
    else ids.push(globToRegExp(p))
  }
  return (principal) => ids.some(re => re.test(principal.id)) || (roles.length > 0 && principal.roles.some(r => roles.some(re => re.test(r))))
}
