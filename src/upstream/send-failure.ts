import { SwitchboardError, isSwitchboardError } from '../errors.ts'
import { isEncodingFailure, unserializable } from '../protocol/encode-json.ts'

/** What a failed send means: the error for that one request, and whether the connection is gone. */
export interface SendFailure { error: SwitchboardError, lost: boolean }

// The SDK's legacy SSE transport reports a status only in its message.
const STATUS_IN_MESSAGE = /\(HTTP (\d{3})\)/

function statusOf (err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const direct = (err as { status?: unknown }).status
  if (typeof direct === 'number') return direct
  const data = (err as { data?: { status?: unknown } }).data
  if (typeof data?.status === 'number') return data.status
  const match = err instanceof Error ? STATUS_IN_MESSAGE.exec(err.message) : null
  return match?.[1] === undefined ? undefined : Number(match[1])
}

/**
 * Only a network failure or an upstream that no longer knows our session (HTTP 404) means the
 * connection is lost; any other status fails the one request it answered, and every other call
 * on the upstream goes on. A message that could not be encoded (nested too deeply, a cycle) never
 * left: it fails alone, whatever the transport threw for it.
 */
export function classifySendFailure (err: unknown): SendFailure {
  if (isEncodingFailure(err)) return { error: unserializable(err), lost: false }
  if (isSwitchboardError(err)) return { error: err, lost: err.code === 'SB_ERR_UPSTREAM_CLOSED' }
  const status = statusOf(err)
  const message = err instanceof Error ? err.message : String(err)
  if (status === 401 || status === 403) {
    return { error: new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `the upstream refused the credential (HTTP ${status})`, { cause: err, details: { status } }), lost: false }
  }
  if (status !== undefined && status !== 404) {
    return { error: new SwitchboardError('SB_ERR_UPSTREAM_HTTP', `the upstream answered HTTP ${status}`, { cause: err, details: { status } }), lost: false }
  }
  return { error: new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', `send failed: ${message}`, { cause: err }), lost: true }
}
