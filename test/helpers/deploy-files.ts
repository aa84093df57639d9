import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { GatewayConfig } from '../../src/config/schema.ts'
import { REPO_ROOT } from './spawn-fixture.ts'

// What the tests of deploy/ (Docker, compose, Kubernetes) share: reading the files, and the
// arithmetic every "how long may a stop take" setting must agree with.

export { REPO_ROOT }

export function readRepoFile (path: string): string {
  return readFileSync(join(REPO_ROOT, path), 'utf8')
}

/**
 * The longest a gateway takes from SIGTERM to exit: it keeps serving for drainDelayMs, gives calls in
 * flight graceMs, then closes each stdio upstream (stdin closed, up to killAfterMs; SIGTERM, up to
 * killAfterMs; then SIGKILL). A supervisor's grace period must be longer, or it SIGKILLs a draining
 * replica.
 */
export function worstCaseShutdownMs (config: GatewayConfig): number {
  const { drainDelayMs, graceMs, killAfterMs } = config.shutdown
  return drainDelayMs + graceMs + 2 * killAfterMs
}

/** `name:tag` or `name@sha256:…` with a tag that names a version: not bare, not `latest`, not a moving major. */
export function imagePinProblem (image: string): string | undefined {
  if (/@sha256:[0-9a-f]{64}$/.test(image)) return undefined
  const lastSlash = image.lastIndexOf('/')
  const colon = image.indexOf(':', lastSlash + 1)
  if (colon === -1) return `${image} has no tag (it means latest)`
  const tag = image.slice(colon + 1)
  if (tag === 'latest') return `${image} is latest`
  // 7-alpine or 2.6 move with every release: a pin names major.minor.patch.
  if (!/^v?\d+\.\d+\.\d+([-.][A-Za-z0-9.-]+)?$/.test(tag)) return `${image}: tag ${tag} is not an exact version`
  return undefined
}

const DURATION_UNITS_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, ns: 0.000001 }

/** A Go-style duration as compose takes it ("25s", "1m30s", "500ms"), in milliseconds. */
export function parseDurationMs (text: string): number {
  const part = /(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)/y
  let total = 0
  let at = 0
  while (at < text.length) {
    part.lastIndex = at
    const match = part.exec(text)
    if (match === null) throw new Error(`not a duration: ${text}`)
    total += Number(match[1]) * (DURATION_UNITS_MS[match[2] ?? ''] ?? Number.NaN)
    at = part.lastIndex
  }
  if (at === 0) throw new Error(`not a duration: ${text}`)
  return total
}
