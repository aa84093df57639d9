import assert from 'node:assert/strict'

/** The JSON-RPC error a client call rejected with (code and message); fails the test if it succeeded. */
export async function rpcErrorOf (pending: Promise<unknown>): Promise<{ code: number, message: string }> {
  try {
    await pending
  } catch (err: unknown) {
    const e = err as { code: number, message: string }
    return { code: e.code, message: e.message }
  }
  assert.fail('the call succeeded')
}
