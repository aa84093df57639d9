import type { Logger } from 'pino'
import { CallCancelledError, SwitchboardError } from '../errors.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import { type CallContext, askClient } from '../session/call-context.ts'
import type { ConnectFlows, ConnectLink } from './connect-flows.ts'
import type { ConnectGate } from './connect-gate.ts'
import type { CredentialRequest } from './credential-provider.ts'

/**
 * How long a request waits, once its user accepted the URL elicitation, for the callback to store
 * their grant (any replica's). A human reads a consent page in that time or not at all; past it the
 * request fails with the URL, and the next one finds the grant.
 */
export const CONNECT_WAIT_MS = 5 * 60_000

export interface UrlConnectGateOptions {
  flows: ConnectFlows
  /** The upstreams whose auth acts for each user through the connect flow (auth type oauth); a reload replaces it. */
  upstreams: () => ReadonlySet<string>
  /** Whether `who` must connect first: the upstream's credential provider's `needsConnect`. */
  needsConnect: (upstream: string, who: CredentialRequest) => Promise<boolean>
  log?: Logger
  /** Tests shorten it; CONNECT_WAIT_MS otherwise. */
  waitMs?: number
}

/** Whether the session's client declared URL-mode elicitation (2025-11-25 at initialize, 2026-07-28 per request). */
export function declaresUrlElicitation (capabilities: Readonly<Record<string, unknown>>): boolean {
  const elicitation = capabilities.elicitation
  return isRecord(elicitation) && elicitation.url !== undefined
}

/** The -32042 answer (error-forms.ts connectRequired): the URL the caller opens to connect. */
function connectRequired (upstream: string, link: ConnectLink, why: string): SwitchboardError {
  return new SwitchboardError('SB_ERR_UPSTREAM_CONNECT_REQUIRED', `the caller has not connected their account at upstream ${upstream} (${why})`, {
    details: { upstream, url: link.url, elicitationId: link.elicitationId }
  })
}

/** Whether an elicitation/create answer accepted (the user agreed to open the URL). */
function accepted (answer: Record<string, unknown>): boolean {
  return answer.action === 'accept'
}

/**
 * The connect gate of per-user OAuth upstreams: a caller with a grant passes at once; one without
 * is asked to connect inside the protocol when their client can show a URL (URL elicitation, or
 * input_required for a 2026-07-28 client: askClient does either), and the request then waits for
 * the callback; any other client gets the -32042 error carrying the URL.
 */
export function createUrlConnectGate (options: UrlConnectGateOptions): ConnectGate {
  const { flows, log } = options
  const waitMs = options.waitMs ?? CONNECT_WAIT_MS

  async function admit (upstream: string, ctx: CallContext): Promise<void> {
    const { principal } = ctx
    if (!await options.needsConnect(upstream, { principal, token: ctx.token })) return
    ctx.connect = 'required'
    const link = await flows.linkFor(upstream, principal)
    if (!declaresUrlElicitation(ctx.session.clientCapabilities)) throw connectRequired(upstream, link, 'the client cannot show a URL elicitation')
    // Watched from before the question: a user quick enough to finish before the client answers is not missed.
    const waiting = new AbortController()
    const cancel = (): void => { waiting.abort(new CallCancelledError()) }
    ctx.signal.addEventListener('abort', cancel)
    const timer = setTimeout(() => { waiting.abort(connectRequired(upstream, link, `not connected within ${waitMs} ms`)) }, waitMs)
    const connected = flows.connected(upstream, principal, waiting.signal)
    // Rejections are read below; until then this keeps one from being reported as unhandled.
    connected.catch(() => {})
    try {
      const message = `Connect your ${upstream} account to continue`
      let answer: Record<string, unknown>
      try {
        answer = await askClient(ctx, 'elicitation/create', { mode: 'url', elicitationId: link.elicitationId, url: link.url, message }, waiting.signal)
      } catch (err: unknown) {
        if (ctx.signal.aborted) throw new CallCancelledError()
        if (waiting.signal.aborted) throw waiting.signal.reason
        log?.debug({ err, upstream }, 'the client could not be asked to connect; answering with the URL')
        throw connectRequired(upstream, link, 'the client could not be asked')
      }
      if (!accepted(answer)) throw connectRequired(upstream, link, `the user answered ${String(answer.action)}`)
      try {
        await connected
      } catch (err: unknown) {
        if (ctx.signal.aborted) throw new CallCancelledError()
        throw waiting.signal.aborted ? waiting.signal.reason : err
      }
      complete(ctx, link.elicitationId)
    } finally {
      clearTimeout(timer)
      ctx.signal.removeEventListener('abort', cancel)
      if (!waiting.signal.aborted) waiting.abort(new CallCancelledError())
    }
  }

  return {
    guards: (upstream) => options.upstreams().has(upstream),
    admit
  }
}

/**
 * notifications/elicitation/complete to the client that was asked: on the request's own stream (it
 * is still open, and the notice then comes before the result), else the session's stream.
 */
function complete (ctx: CallContext, elicitationId: string): void {
  const message = { jsonrpc: '2.0' as const, method: 'notifications/elicitation/complete', params: { elicitationId } }
  if (ctx.related !== undefined) ctx.related(message)
  else ctx.session.sendUnsolicited?.(message)
}
