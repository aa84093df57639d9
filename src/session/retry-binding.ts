import { createHash } from 'node:crypto'
import { type Principal, isSamePrincipal } from '../auth/principal.ts'
import type { JsonRpcRequest } from '../protocol/json-rpc.ts'

/**
 * What a 2026-07-28 retry may change from the request it repeats: its answers, the requestState
 * itself, and `_meta` (the envelope, a new progress token, trace context). Everything else in
 * `params` (the tool's arguments, a prompt's, a URI) must be the same.
 */
const RETRY_FIELDS: ReadonlySet<string> = new Set(['inputResponses', 'requestState', '_meta'])

/** What a requestState is bound to: who asked, what, and a digest of the rest of the request's params. */
export interface RetryBinding {
  readonly principal: Principal
  readonly method: string
  readonly digest: string
}

export function bindingOf (principal: Principal, request: JsonRpcRequest): RetryBinding {
  return { principal, method: request.method, digest: paramsDigest(request.params) }
}

/** Why `retry` by `principal` may not go on with the call bound to `bound`; undefined: it may. */
export function retryMismatch (bound: RetryBinding, principal: Principal, retry: JsonRpcRequest): string | undefined {
  if (!isSamePrincipal(bound.principal, principal)) return 'the requestState was issued to another principal'
  if (bound.method !== retry.method) return `the retry is ${retry.method}, the requestState was issued for ${bound.method}`
  if (bound.digest !== paramsDigest(retry.params)) return 'the retry\'s params (name, arguments, uri) differ from the request the requestState was issued for'
  return undefined
}

/** sha256 of the canonical JSON of `params` without the fields a retry may change. */
export function paramsDigest (params: Record<string, unknown> | undefined): string {
  const kept: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(params ?? {})) if (!RETRY_FIELDS.has(key)) kept[key] = value
  return createHash('sha256').update(canonicalJson(kept)).digest('base64url')
}

/** Text written as is, as opposed to a value still to serialize. */
class Token {
  readonly text: string
  constructor (text: string) { this.text = text }
}
const OPEN_ARRAY = new Token('[')
const CLOSE_ARRAY = new Token(']')
const OPEN_OBJECT = new Token('{')
const CLOSE_OBJECT = new Token('}')
const COMMA = new Token(',')

/**
 * JSON with object keys sorted (code-unit order), so two equal values give equal text however
 * their keys were ordered. With an explicit stack, not recursion: a value nested thousands of levels
 * deep is hashed like any other instead of overflowing the call stack.
 */
export function canonicalJson (value: unknown): string {
  const out: string[] = []
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const item = stack.pop()
    if (item instanceof Token) {
      out.push(item.text)
    } else if (Array.isArray(item)) {
      stack.push(CLOSE_ARRAY)
      for (let i = item.length - 1; i >= 0; i--) {
        stack.push(item[i] ?? null)
        if (i > 0) stack.push(COMMA)
      }
      stack.push(OPEN_ARRAY)
    } else if (typeof item === 'object' && item !== null) {
      const entries = Object.entries(item).filter(([, v]) => v !== undefined).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
      stack.push(CLOSE_OBJECT)
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, v] = entries[i] as [string, unknown]
        stack.push(v, new Token(`${JSON.stringify(key)}:`))
        if (i > 0) stack.push(COMMA)
      }
      stack.push(OPEN_OBJECT)
    } else {
      out.push(JSON.stringify(item) ?? 'null')
    }
  }
  return out.join('')
}
