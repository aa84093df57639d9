import { revealInto } from '../auth/secret.ts'
import type { CredentialHeaders } from '../credentials/credential-provider.ts'
import type { TraceCarrier } from '../observability/tracing.ts'

/** A 2026-07-28 request's own headers (modern-request.ts). */
export interface RpcHeaders { method: string, name: string | undefined, params?: Record<string, string> }

export type HttpMethod = 'POST' | 'GET' | 'DELETE'

/**
 * The headers of an HTTP upstream's requests: its fixed ones, then (later ones winning) credentials,
 * trace context, content negotiation, the session and protocol version, and a request's own. The
 * common POST (nothing of its own, no credential: every call of a 2025-11-25 session to an upstream
 * without credentials) sends the same headers every time: one list, kept until the session or the
 * protocol version changes, instead of an object built per request.
 */
export class RequestHeaders {
  #sessionId: string | undefined
  #protocolVersion: string | undefined
  #post: string[] | undefined
  private readonly fixed: Readonly<Record<string, string>>

  constructor (fixed: Readonly<Record<string, string>>) {
    this.fixed = fixed
  }

  get sessionId (): string | undefined { return this.#sessionId }
  set sessionId (id: string | undefined) {
    this.#sessionId = id
    this.#post = undefined
  }

  get protocolVersion (): string | undefined { return this.#protocolVersion }
  set protocolVersion (version: string | undefined) {
    this.#protocolVersion = version
    this.#post = undefined
  }

  /**
   * A request's headers: for a POST with nothing of its own and no credential to reveal, the shared
   * list (undici's flat form: name, value, ...); else an object built for it (`build`).
   */
  for (method: HttpMethod, secrets?: CredentialHeaders, lastEventId?: string, trace?: TraceCarrier, rpc?: RpcHeaders): Record<string, string> | string[] {
    if (method === 'POST' && lastEventId === undefined && trace === undefined && rpc === undefined && (secrets === undefined || isEmpty(secrets))) return this.plainPost()
    return this.build(method, secrets, lastEventId, trace, rpc)
  }

  /** A POST's headers when it has none of its own: undici's flat list, shared. */
  plainPost (): string[] {
    return (this.#post ??= flatten(this.build('POST')))
  }

  /** `secrets`: revealed here only, into this request's headers. */
  build (method: HttpMethod, secrets?: CredentialHeaders, lastEventId?: string, trace?: TraceCarrier, rpc?: RpcHeaders): Record<string, string> {
    const headers: Record<string, string> = { ...this.fixed }
    if (secrets !== undefined) revealInto(headers, secrets)
    if (trace !== undefined) Object.assign(headers, trace)
    if (method === 'POST') {
      headers['content-type'] = 'application/json'
      headers.accept = 'application/json, text/event-stream'
    } else if (method === 'GET') {
      headers.accept = 'text/event-stream'
    }
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId
    if (rpc !== undefined) headers['mcp-method'] = rpc.method
    if (rpc?.name !== undefined) headers['mcp-name'] = rpc.name
    if (rpc?.params !== undefined) Object.assign(headers, rpc.params)
    return headers
  }
}

/**
 * No credential in it. A revealed credential is never kept in the shared list: it lives in one
 * request's headers only.
 */
function isEmpty (secrets: CredentialHeaders): boolean {
  for (const name in secrets) if (secrets[name] !== undefined) return false
  return true
}

/** Headers as undici's flat list, in the object's order. */
function flatten (headers: Record<string, string>): string[] {
  const list: string[] = []
  for (const name in headers) list.push(name, headers[name] as string)
  return list
}
