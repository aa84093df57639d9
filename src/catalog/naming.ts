import { createHash } from 'node:crypto'

// Exposed names every major client accepts: Anthropic, OpenAI and Gemini take ^[A-Za-z][A-Za-z0-9_-]*$ up to 64.
export const EXPOSED_NAME = /^[A-Za-z][A-Za-z0-9_-]*$/
const HASH_LENGTH = 6

export interface NameRequest {
  upstream: string
  /** The upstream's own tool name. */
  tool: string
  /** Name after the per-upstream rename, before the prefix. */
  local: string
  prefix: string
  /** Lower wins a contested name: the upstream's position in the config. */
  priority: number
}

export type RenameReason = 'invalid-characters' | 'too-long' | 'collision'

export interface NameAssignment extends NameRequest {
  exposed: string
  reason?: RenameReason
}

export interface NamingOptions { separator: string, maxNameLength: number }

export function joinName (prefix: string, separator: string, local: string): string {
  return prefix === '' ? local : `${prefix}${separator}${local}`
}

export function sanitizeName (name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_-]/g, '_')
  return /^[A-Za-z]/.test(cleaned) ? cleaned : `t${cleaned}`
}

function shortHash (upstream: string, tool: string, salt: number): string {
  return createHash('sha256').update(`${upstream}\0${tool}\0${salt}`).digest('base64url').replace(/[^A-Za-z0-9]/g, '').slice(0, HASH_LENGTH).toLowerCase()
}

/** A name that fits: the cleaned name cut short, then a hash of (upstream, tool) so it is stable across restarts. */
function hashedName (cleaned: string, request: NameRequest, maxLength: number, salt: number): string {
  const suffix = `_${shortHash(request.upstream, request.tool, salt)}`
  return cleaned.slice(0, maxLength - suffix.length) + suffix
}

/**
 * Assigns every tool an exposed name that is valid, fits the limit and is unique. A name is kept
 * as-is when it can be; otherwise it is shortened or disambiguated with a hash, and the reason is
 * returned so it can be reported. Nothing is ever silently shadowed. Deterministic for the same input.
 */
export function assignNames (requests: readonly NameRequest[], options: NamingOptions): NameAssignment[] {
  const ordered = [...requests].sort((a, b) => a.priority - b.priority || compare(a.tool, b.tool))
  const taken = new Set<string>()
  const out: NameAssignment[] = []
  const pending: Array<{ request: NameRequest, cleaned: string, reason: RenameReason }> = []
  const wanted = new Map<string, number>()
  for (const request of ordered) {
    const full = joinName(request.prefix, options.separator, request.local)
    wanted.set(full, (wanted.get(full) ?? 0) + 1)
  }
  for (const request of ordered) {
    const full = joinName(request.prefix, options.separator, request.local)
    const cleaned = sanitizeName(full)
    let reason: RenameReason | undefined
    if (cleaned !== full) reason = 'invalid-characters'
    else if (full.length > options.maxNameLength) reason = 'too-long'
    else if (taken.has(full)) reason = 'collision'
    if (reason === undefined) {
      taken.add(full)
      out.push({ ...request, exposed: full })
    } else {
      pending.push({ request, cleaned, reason })
    }
  }
  // Renamed names are assigned after every valid name has claimed its own, so they never displace one.
  for (const { request, cleaned, reason } of pending) {
    let salt = 0
    let exposed = cleaned.length <= options.maxNameLength && !taken.has(cleaned) && !wanted.has(cleaned) && reason === 'invalid-characters'
      ? cleaned
      : hashedName(cleaned, request, options.maxNameLength, salt)
    while (taken.has(exposed)) exposed = hashedName(cleaned, request, options.maxNameLength, ++salt)
    taken.add(exposed)
    out.push({ ...request, exposed, reason })
  }
  return out
}

function compare (a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Minimal glob: `*` matches any run of characters, `?` one character. */
export function globToRegExp (glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')
  return new RegExp(`^${body}$`)
}

export function createMatcher (globs: readonly string[]): (name: string) => boolean {
  const patterns = globs.map(globToRegExp)
  return (name) => patterns.some(p => p.test(name))
}
