import { newStreamId } from './event-store.ts'

// A POST's SSE stream answers one request, on the replica that runs it. A client that lost that
// stream may resume it with Last-Event-ID on any replica, also after Redis lost the stream's events:
// so the stream id itself says which request it answers and which replica runs it, and the replica
// the resume lands on can follow the call there, or answer that request with an error when the call
// is lost, instead of guessing. The id is the 16 random characters of a GET stream's id followed by
// the base64url JSON `[replica, requestId]`; a request id too long to fit is left out (`[replica]`).

/** Random part, as newStreamId makes it. */
const RANDOM_CHARS = 16
/** Stream ids stay well under MAX_EVENT_ID_LENGTH with their seq. */
const MAX_STREAM_ID_CHARS = 160

export type RequestId = string | number

export interface RequestStreamOrigin {
  /** The tag of the replica running the request. */
  replica: string
  /** The request the stream answers; null when it was too long to fit in the id. */
  requestId: RequestId | null
}

export function requestStreamId (replica: string, requestId: RequestId): string {
  const random = newStreamId()
  const full = random + encode([replica, requestId])
  if (full.length <= MAX_STREAM_ID_CHARS) return full
  return random + encode([replica])
}

/** What a stream id says about its request; undefined for a GET stream's id or anything not made by requestStreamId. */
export function requestStreamOrigin (streamId: string): RequestStreamOrigin | undefined {
  if (streamId.length <= RANDOM_CHARS || streamId.length > MAX_STREAM_ID_CHARS) return undefined
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(streamId.slice(RANDOM_CHARS), 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (!Array.isArray(value) || typeof value[0] !== 'string' || value[0] === '' || value.length > 2) return undefined
  const [replica, requestId] = value as [string, unknown]
  if (value.length === 1) return { replica, requestId: null }
  if (typeof requestId === 'string' || (typeof requestId === 'number' && Number.isFinite(requestId))) return { replica, requestId }
  return undefined
}

function encode (value: unknown[]): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
}
