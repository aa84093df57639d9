import type { Principal } from '../auth/principal.ts'
import type { ErrorCode } from '../errors.ts'
import { CallSignal } from '../protocol/cancel-signal.ts'
import { type JsonRpcMessage, type JsonRpcResponse, RPC, isRecord, isResponse, rpcError } from '../protocol/json-rpc.ts'
import { type EventStore, parseEventId } from '../session/event-store.ts'
import type { RequestStreamOrigin } from '../session/request-stream-id.ts'
import type { RetryHandler, RetryRouter } from '../session/retry-router.ts'
import type { StreamConnection } from './resumable-stream.ts'

// A client resumed a POST's SSE stream (Last-Event-ID) on a replica that does not run the call.
// That replica asks the one that does (named in the stream id) over the session store's bus to
// follow the stream for it: the running replica attaches a connection that relays each event back,
// and the RetryRouter's heartbeats tell the follower when that replica is gone. Whatever way it
// ends, the resumed stream carries the request's answer or an error for that request id, then ends:
// a request's stream never turns into the session's standalone stream, and never just stays open.

const RESUME_METHOD = 'switchboard/resumeStream'
const EVENT_METHOD = 'switchboard/streamEvent'

/** The running replica's verdicts, as the forwarded request's status. */
const ENDED = 200
const REPLACED = 409
const REFUSED = 404

const ALIVE_CHECKS = 3
const ALIVE_CHECK_GAP_MS = 500

/** The running replica's side: resumes the session's stream on `connection` (replays, then attaches it if the stream goes on). */
export type ResumeHere = (sessionId: string, principal: Principal, streamId: string, after: string, connection: StreamConnection) => Promise<{ ended: () => boolean } | undefined>

/** A connection whose events go back over the bus to the replica the client resumed on. */
class BusConnection implements StreamConnection {
  onClosed: () => void = () => {}
  private closed = false
  private readonly relay: (message: JsonRpcMessage) => void
  private readonly whenClosed: () => void

  constructor (relay: (message: JsonRpcMessage) => void, whenClosed: () => void) {
    this.relay = relay
    this.whenClosed = whenClosed
  }

  send (message: JsonRpcMessage, id?: string): void {
    if (this.closed) return
    this.relay({ jsonrpc: '2.0', method: EVENT_METHOD, params: { id, message } })
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.onClosed()
    this.whenClosed()
  }
}

/** Serves, on the replica running a call, another replica's request to follow the call's stream. */
export function serveResumeHere (resumeHere: ResumeHere): RetryHandler {
  return async (request, principal, send, gone, sessionId) => {
    const streamId = request.params?.streamId
    const after = request.params?.after
    if (sessionId === undefined || typeof streamId !== 'string' || typeof after !== 'string') return { status: REFUSED, response: undefined }
    let closed!: () => void
    const done = new Promise<void>(resolve => { closed = resolve })
    const connection = new BusConnection(send, closed)
    // The client left the replica that follows: the stream here forgets this connection.
    const leave = (): void => { connection.close() }
    gone.addEventListener('abort', leave)
    try {
      const outcome = await resumeHere(sessionId, principal, streamId, after, connection)
      if (outcome === undefined) return { status: REFUSED, response: undefined }
      await done
      return { status: outcome.ended() ? ENDED : REPLACED, response: undefined }
    } finally {
      gone.removeEventListener('abort', leave)
    }
  }
}

export interface FollowOptions {
  /** Undefined with one replica: nothing runs elsewhere. */
  router: RetryRouter | undefined
  store: EventStore
  /** This replica's tag. */
  replica: string
  sessionId: string
  principal: Principal
  streamId: string
  origin: RequestStreamOrigin
  /** The resumed stream's connection to the client. */
  connection: StreamConnection
  /** The newest event id the client has. */
  after: string
}

/**
 * Delivers the rest of a request's stream that does not run here: followed on the replica running
 * it, then whatever the store holds; ends with the request's answer or a -32603 error
 * (SB_ERR_CALL_LOST) for that request id, and closes the connection. Resolves once done, or once
 * the client left.
 */
export async function followElsewhere (options: FollowOptions): Promise<void> {
  const { connection, origin } = options
  let last = options.after
  let answered = false
  const deliver = (message: unknown, id: string | undefined): void => {
    if (answered || !isRecord(message)) return
    const seq = id === undefined ? undefined : parseEventId(id)?.seq
    const lastSeq = parseEventId(last)?.seq ?? -1
    if (seq === undefined || seq <= lastSeq) return
    connection.send(message as unknown as JsonRpcMessage, id)
    last = id as string
    if (isResponse(message as unknown as JsonRpcMessage)) answered = true
  }
  const left = new CallSignal()
  connection.onClosed = () => { left.abort(new Error('the client closed the resumed stream')) }

  let replicaLost = false
  if (options.router !== undefined && origin.replica !== options.replica && await isGone(options.store, origin.replica)) {
    replicaLost = true
  } else if (options.router !== undefined && origin.replica !== options.replica && !left.aborted) {
    const request = { jsonrpc: '2.0' as const, id: origin.requestId ?? 'resume', method: RESUME_METHOD, params: { streamId: options.streamId, after: last } }
    const relayed = (message: JsonRpcMessage): void => {
      if (!('method' in message) || message.method !== EVENT_METHOD || !isRecord(message.params)) return
      const id = message.params.id
      deliver(message.params.message, typeof id === 'string' ? id : undefined)
    }
    const { status, response } = await options.router.forward(origin.replica, request, options.principal, relayed, left, options.sessionId, 'resume')
    if (left.aborted) return
    // A newer connection of the client follows the stream now: this one just ends.
    if (status === REPLACED && !answered) {
      connection.close()
      return
    }
    // The running replica does not answer (stopped): the router's error says so.
    if (response !== undefined && 'error' in response) replicaLost = true
  }
  if (!answered && !left.aborted) {
    // The answer may be in the store although its replica is gone (stored just before it died).
    const replay = await options.store.replayAfter(options.sessionId, options.streamId, last)
    for (const event of replay ?? []) deliver(event.message, event.id)
  }
  if (left.aborted) return
  if (!answered) connection.send(callLost(origin, replicaLost))
  connection.close()
}

const CALL_LOST: ErrorCode = 'SB_ERR_CALL_LOST'

/** A replica that is gone is known at once from Redis (nothing listens on its channel); looked at a few times, as a live replica resubscribes after a Redis restart. */
async function isGone (store: EventStore, replica: string): Promise<boolean> {
  const standalone = store.standalone
  if (standalone === undefined) return false
  for (let check = 0; check < ALIVE_CHECKS; check++) {
    if (check > 0) await new Promise(resolve => setTimeout(resolve, ALIVE_CHECK_GAP_MS))
    if (await standalone.replicaAlive(replica) !== false) return false
  }
  return true
}

function callLost (origin: RequestStreamOrigin, replicaLost: boolean): JsonRpcResponse {
  const why = !replicaLost
    ? `the answer to this request was lost (its stream ended on gateway replica ${origin.replica} without one reaching the event store)`
    : `the call was lost with gateway replica ${origin.replica} (it stopped or cannot be reached)`
  return rpcError(origin.requestId, RPC.INTERNAL_ERROR, `Switchboard: ${why}; it may or may not have taken effect`,
    { 'switchboard/error': { code: CALL_LOST, replica: origin.replica } })
}
