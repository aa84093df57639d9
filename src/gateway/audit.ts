import type { Logger } from 'pino'
import type { ApprovalRecord } from '../approval/approval-record.ts'
import type { Actor, Principal } from '../auth/principal.ts'
import type { AuditConfig } from '../config/access-schema.ts'
import type { CallOutcome } from '../observability/metrics.ts'
import { secretRegistry } from '../config/secret-registry.ts'
import { rawByteLength } from '../protocol/raw-result.ts'

export interface AuditRecord {
  /** The request's call id (CallContext.callId): approvals and webhooks name the same one. */
  callId: string
  principal: Principal
  /** Set when the admin API made the call as `principal`. */
  actor?: Actor | undefined
  /** The endpoint path segment the call came through; undefined for /mcp. */
  endpoint?: string | undefined
  /** The exposed name the client called. */
  tool: string
  /** '' when the name resolved to no upstream. */
  upstream: string
  outcome: CallOutcome
  durationMs: number
  /** Size of the result as JSON; 0 when the call ended in a JSON-RPC error. */
  responseBytes: number
  arguments: unknown
  /** The auth type that served the call (static, oauth, client_credentials, token_exchange); undefined when it reached no upstream. */
  auth?: string | undefined
  /** 'required' when the caller had to connect their account at the upstream first. */
  connect?: 'required' | undefined
  /** Set when a policy rule with effect ask held the call: who was asked, the answer, how long it took. */
  approval?: ApprovalRecord | undefined
}

export type AuditLog = (record: AuditRecord) => void

const REDACTED = '[redacted]'
const MAX_DEPTH = 8

/** A field-name test on lower-cased names; a Set of exact names is one. */
export interface FieldTest { has: (lowerCaseName: string) => boolean }

/** `-`, `_`, `.` and spaces dropped, so "apikey" matches api_key, x-api-key and apiKey alike. */
function squash (name: string): string {
  return name.toLowerCase().replace(/[-_.\s]/g, '')
}

/** Exact names (case-insensitive) and name patterns (substrings of the squashed name). */
export function createFieldTest (exact: readonly string[], patterns: readonly string[]): FieldTest {
  const names = new Set(exact.map(f => f.toLowerCase()))
  const parts = patterns.map(squash).filter(p => p !== '')
  return { has: (name) => names.has(name) || (parts.length > 0 && parts.some(p => squash(name).includes(p))) || secretRegistry.isSecretKey(name) }
}

/**
 * One structured line per tools/call, on the `audit` component: its call id, who called what, where it went,
 * how it ended, how long and how big. Arguments only when configured, with the configured fields
 * (at any depth, case-insensitive; exact names and name patterns) replaced. Strings are cut by the
 * logger (logging.maxStringChars).
 */
export function createAuditLog (config: AuditConfig, log: Logger): AuditLog | undefined {
  const audit = log.child({ component: 'audit' })
  // At a level that drops info lines, nothing is measured or serialized for them either.
  if (!config.enabled || !audit.isLevelEnabled('info')) return undefined
  const redact = createFieldTest(config.redact, config.redactPatterns)
  return (r) => {
    const line: Record<string, unknown> = {
      callId: r.callId,
      principal: r.principal.id,
      via: r.principal.via,
      ...(r.actor === undefined ? {} : { actor: { via: r.actor.via, as: r.actor.as } }),
      ...(r.endpoint === undefined ? {} : { endpoint: r.endpoint }),
      tool: r.tool,
      upstream: r.upstream,
      outcome: r.outcome,
      durationMs: Math.round(r.durationMs * 1000) / 1000,
      responseBytes: r.responseBytes,
      ...(r.auth === undefined ? {} : { auth: r.auth }),
      ...(r.connect === undefined ? {} : { connect: r.connect }),
      ...(r.approval === undefined ? {} : { approval: r.approval })
    }
    if (config.arguments) line.arguments = redactFields(r.arguments ?? {}, redact, 0)
    audit.info(line, 'tool call')
  }
}

/** A copy of `value` with every field named in `redact` replaced; deeper than MAX_DEPTH is cut. */
export function redactFields (value: unknown, redact: FieldTest, depth: number): unknown {
  if (typeof value === 'string') return secretRegistry.redactValue(value)
  if (value === null || typeof value !== 'object') return value
  if (depth >= MAX_DEPTH) return '[truncated]'
  if (Array.isArray(value)) return value.map(v => redactFields(v, redact, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = redact.has(k.toLowerCase()) ? REDACTED : redactFields(v, redact, depth + 1)
  return out
}

/**
 * Bytes of a result as it goes on the wire (JSON, UTF-8); 0 for one that cannot be written (nested
 * too deeply): counted in a finally, it must not turn that one call's answer into a throw.
 */
export function jsonBytes (value: unknown): number {
  const known = typeof value === 'object' && value !== null ? measured.get(value) : undefined
  if (known !== undefined) return known
  let bytes: number
  try {
    // A result relayed as it arrived is measured as its text, without serializing it.
    bytes = rawByteLength(value) ?? Buffer.byteLength(JSON.stringify(value))
  } catch {
    bytes = 0
  }
  if (typeof value === 'object' && value !== null) measured.set(value, bytes)
  return bytes
}

/**
 * Sizes already measured, by object: the result-size guardrail measures a result and the audit
 * line measures it again when the call ends; a large result is written to JSON once. Results are
 * not changed after they are measured (a step that changes one makes a new object).
 */
const measured = new WeakMap<object, number>()
