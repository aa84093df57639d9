import { SwitchboardError, isSwitchboardError } from '../errors.ts'

/**
 * JSON text of one outgoing message. JSON.stringify recurses, so a value nested a few thousand
 * levels deep overflows the stack; a cycle or a BigInt throws too. Any of these is a fault of that
 * one message, never of the connection it was to go on: it becomes SB_ERR_MESSAGE_UNSERIALIZABLE,
 * which no transport or peer mistakes for a lost connection.
 */
export function encodeJson (value: unknown): string {
  try {
    return JSON.stringify(value)
  } catch (err: unknown) {
    throw unserializable(err)
  }
}

/** The failure of encoding a message as SB_ERR_MESSAGE_UNSERIALIZABLE; `details.tooDeep` when the stack overflowed. */
export function unserializable (err: unknown): SwitchboardError {
  if (isSwitchboardError(err, 'SB_ERR_MESSAGE_UNSERIALIZABLE')) return err
  const tooDeep = err instanceof RangeError
  const why = tooDeep ? 'it is nested too deeply' : err instanceof Error ? err.message : String(err)
  return new SwitchboardError('SB_ERR_MESSAGE_UNSERIALIZABLE', `the message cannot be written as JSON: ${why}`, { cause: err, details: { tooDeep } })
}

// What JSON.stringify throws besides a stack overflow (V8's messages).
const STRINGIFY_TYPE_ERROR = /circular structure|serialize a BigInt/i

/**
 * Whether a transport's send failed on its message rather than on its connection: our own
 * encoding error, or what JSON.stringify throws inside a transport we do not own (the SDK's). A
 * RangeError is always the message's (a stack overflow, or an invalid string length): a network
 * failure never is one.
 */
export function isEncodingFailure (err: unknown): boolean {
  if (isSwitchboardError(err, 'SB_ERR_MESSAGE_UNSERIALIZABLE')) return true
  if (err instanceof RangeError) return true
  return err instanceof TypeError && STRINGIFY_TYPE_ERROR.test(err.message)
}
