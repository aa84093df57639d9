// One JSON text per message on every downstream transport. A result may carry its own JSON, written
// once when it was built (a catalog page shared by many sessions): the answer then only wraps it.
import { RPC, type JsonRpcMessage, rpcError } from './json-rpc.ts'
import { rawAnswer } from './raw-answer.ts'
import { rawByteLength, rawBytesOf, rawJsonOf } from './raw-result.ts'

const OWN_JSON = Symbol('switchboard.ownJson')

interface WithOwnJson { [OWN_JSON]?: string }

/**
 * Freezes `result` and keeps its JSON text with it, so that every answer carrying it reuses the text.
 * The symbol is invisible to JSON.stringify: anything else that serializes the result sees the same.
 */
export function withOwnJson<T extends object> (result: T): Readonly<T> {
  Object.defineProperty(result, OWN_JSON, { value: JSON.stringify(result) })
  return Object.freeze(result)
}

/**
 * The message as JSON text, the same as JSON.stringify gives, without serializing a result twice.
 * Never throws: a message that cannot be written (an upstream's answer nested deeper than
 * JSON.stringify recurses, a cycle) becomes a stand-in, so that one bad message fails alone and the
 * stream, socket or session carrying it goes on for everything else.
 */
export function messageJson (message: JsonRpcMessage): string {
  try {
    return keptJson(message) ?? JSON.stringify(message)
  } catch {
    return JSON.stringify(standIn(message))
  }
}

/** From this many bytes of relayed result, an answer is written as the pieces the result arrived in (messageBody). */
const BODY_AS_BYTES = 64 * 1024

/** What a writer puts on the wire for one message: text, or the bytes of a large relayed answer in pieces. */
export type WireBody = string | Buffer[]

/**
 * What a writer puts on the wire for one message, with `before` and `after` around its JSON (an SSE
 * event's lines). An answer that relays a large result as it arrived (raw-result.ts) is its head,
 * the result's bytes in the pieces they arrived in, and its tail: nothing is copied, where joining
 * the pieces, decoding them and encoding the answer again cost three more copies of a 30 MB result.
 * Anything else is messageJson's text.
 */
export function messageBody (message: JsonRpcMessage, before = '', after = ''): WireBody {
  const size = 'result' in message ? rawByteLength(message.result) : undefined
  if (size === undefined || size < BODY_AS_BYTES || !('result' in message) || !('id' in message)) return before + messageJson(message) + after
  const raw = rawBytesOf(message.result)
  if (raw === undefined) return before + messageJson(message) + after
  return [Buffer.from(`${before}{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":`), ...raw.pieces, Buffer.from(`}${after}`)]
}

/** The bytes a body takes on the wire. */
export function bodyBytes (body: WireBody): number {
  if (typeof body === 'string') return Buffer.byteLength(body)
  let n = 0
  for (const piece of body) n += piece.length
  return n
}

/**
 * The answer's JSON text made from the text its result carries: an upstream's result relayed as it
 * arrived (raw-result.ts), or one written once for many answers. Undefined for any other message,
 * which its writer serializes its own way (a store that keeps messages throws on what it cannot write).
 */
export function keptJson (message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null || !('result' in message) || !('id' in message)) return undefined
  const own = (message.result as WithOwnJson)[OWN_JSON] ?? rawJsonOf(message.result)
  return own === undefined ? undefined : `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${own}}`
}

/** An answer is replaced by an error to the same request; anything else by a warning to the client. */
export function standIn (message: JsonRpcMessage): JsonRpcMessage {
  const why = 'could not be written as JSON (nested too deeply, or holding a value JSON cannot carry)'
  if (!('method' in message)) return rpcError(typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null, RPC.INTERNAL_ERROR, `Internal error: the answer ${why}`)
  return { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'warning', logger: 'switchboard', data: `Switchboard: a ${message.method} message ${why} and was dropped` } }
}

/**
 * A message kept as JSON text (an event store, recent answers) as it is replayed: an answer's
 * result stays the bytes it was sent as, so that a replay writes the same bytes again.
 */
export function storedMessage (json: string): unknown {
  const answer = rawAnswer(json)
  return answer === undefined ? JSON.parse(json) : { jsonrpc: '2.0', id: answer.id, result: answer.result }
}
