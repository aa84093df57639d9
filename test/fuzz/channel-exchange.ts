// The fuzz check for transports where one connection carries every message both ways (WebSocket,
// legacy HTTP+SSE): answers are not tied to the request that carried them, so messages are sent one
// at a time and each is followed by what must come back.
import assert from 'node:assert/strict'
import { ANSWER_TIMEOUT_MS, assertResponse, isResponseLike, sameId } from './fuzz-support.ts'
import { parsed } from './mutations.ts'

/** Everything the gateway sent on one connection, with waits for what is still to come. */
export class MessageInbox {
  readonly messages: unknown[] = []
  private waiters: Array<() => void> = []
  private closedWhy: string | undefined

  push (message: unknown): void {
    this.messages.push(message)
    for (const wake of this.waiters.splice(0)) wake()
  }

  /** The connection ended: nothing more will come. */
  close (why: string): void {
    this.closedWhy = why
    for (const wake of this.waiters.splice(0)) wake()
  }

  /** The first message at or after `from` that `match` accepts; fails on a hang or a closed connection. */
  async waitFrom (from: number, match: (m: unknown) => boolean, what: string): Promise<unknown> {
    const deadline = Date.now() + ANSWER_TIMEOUT_MS
    for (let i = from; ;) {
      for (; i < this.messages.length; i++) if (match(this.messages[i])) return this.messages[i]
      if (this.closedWhy !== undefined) assert.fail(`${what}: the connection closed (${this.closedWhy}) before it came`)
      const left = deadline - Date.now()
      if (left <= 0) assert.fail(`${what}: nothing within ${ANSWER_TIMEOUT_MS} ms`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
  }
}

type Kind = 'request' | 'notification' | 'response' | 'invalid'

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** What JSON-RPC 2.0 (with MCP's object params) makes of a parsed message. */
export function kindOf (value: unknown): Kind {
  if (!isRecord(value) || value.jsonrpc !== '2.0') return 'invalid'
  // A response with a stray non-string `method` is taken as the response it otherwise is (lenient, harmless).
  if (typeof value.method === 'string') {
    if (value.params !== undefined && !isRecord(value.params)) return 'invalid'
    if (!('id' in value)) return 'notification'
    return typeof value.id === 'string' || (typeof value.id === 'number' && Number.isFinite(value.id)) ? 'request' : 'invalid'
  }
  return 'result' in value || 'error' in value ? 'response' : 'invalid'
}

let pings = 0

/** Sends one text; false: the transport refused it itself (and the sender checked how), so nothing comes on the connection. */
export type Send = (text: string) => Promise<boolean | undefined>

/**
 * Sends one fuzzed text and checks what comes back: a request gets its response (its id, result or
 * spec error); text that does not parse gets -32700 and a value that is no message -32600, both with
 * id null; a notification or a response gets nothing back (a response the gateway finds malformed may
 * get -32600). Text the transport refuses itself gets nothing on the connection. Then a ping must still be answered: the connection was not wedged.
 */
export async function exchange (send: Send, inbox: MessageInbox, text: string): Promise<void> {
  const value = parsed(text)
  const kind = value.ok ? kindOf(value.value) : 'invalid'
  const start = inbox.messages.length
  const what = `sent ${text.slice(0, 400)}`
  const accepted = await send(text) !== false
  if (!accepted) assert.notEqual(kind, 'request', `${what}: a well-formed request was refused by the transport`)
  if (kind === 'request') {
    const id = (value as { value: { id: unknown } }).value.id
    const answer = await inbox.waitFrom(start, m => isResponseLike(m) && sameId(m.id, id), `${what}: the answer`)
    assertResponse(answer, [id], what)
  }
  const pingId = `fuzz-ping-${++pings}`
  await send(JSON.stringify({ jsonrpc: '2.0', id: pingId, method: 'ping' }))
  const pong = await inbox.waitFrom(start, m => isResponseLike(m) && m.id === pingId, `${what}: the ping after it`)
  assertResponse(pong, [pingId], `${what}: the ping after it`)
  const end = inbox.messages.indexOf(pong)
  const nullAnswers = inbox.messages.slice(start, end).filter(m => isResponseLike(m) && (m.id === null || m.id === undefined))
  for (const m of nullAnswers) assertResponse(m, [null], `${what}: an answer with id null`)
  const codes = nullAnswers.map(m => (m as { error?: { code?: unknown } }).error?.code)
  if (!accepted) assert.deepEqual(codes, [], `${what}: refused by the transport, yet answered on the connection too`)
  else if (!value.ok) assert.deepEqual(codes, [-32700], `${what}: text that does not parse gets one -32700`)
  else if (kind === 'invalid') assert.deepEqual(codes, [-32600], `${what}: a value that is no JSON-RPC message gets one -32600`)
  else if (kind === 'response') assert.ok(codes.every(c => c === -32600) && codes.length <= 1, `${what}: a response gets nothing or -32600, got ${JSON.stringify(codes)}`)
  else assert.deepEqual(codes, [], `${what}: a ${kind} gets no error with id null`)
}
