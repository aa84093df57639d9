// What every fuzz test shares: the seed and the run count (printed, replayable), the checks of an
// answer against the JSON-RPC 2.0 spec, and reading a POST's answer whether JSON or SSE.
import assert from 'node:assert/strict'
import { isDeepStrictEqual } from 'node:util'
import type { TestContext } from 'node:test'
import fc from 'fast-check'
import { isWellFormedRequest, parsed } from './mutations.ts'

/** How long the test waits for any one answer before calling it a hang. */
export const ANSWER_TIMEOUT_MS = 10_000

export interface FuzzSettings { seed: number, numRuns: number, path?: string }

/**
 * FUZZ_SEED replays a run (with FUZZ_PATH, fast-check's counterexample path, straight to the failing
 * case); FUZZ_RUNS raises the number of cases. The seed is printed before the run starts.
 */
export function fuzzSettings (t: TestContext, file: string, defaultRuns: number): FuzzSettings {
  const fromEnv = process.env.FUZZ_SEED
  const seed = fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : Math.floor(Math.random() * 2 ** 31)
  assert.ok(Number.isInteger(seed), `FUZZ_SEED must be an integer, not ${fromEnv}`)
  const runs = Number(process.env.FUZZ_RUNS ?? '')
  const numRuns = Number.isInteger(runs) && runs > 0 ? runs : defaultRuns
  const path = process.env.FUZZ_PATH === undefined || process.env.FUZZ_PATH === '' ? undefined : process.env.FUZZ_PATH
  t.diagnostic(`fuzz "${t.name}": seed ${seed}, ${numRuns} runs; replay with ${replayCommand(seed, file, t.name)}`)
  return path === undefined ? { seed, numRuns } : { seed, numRuns, path }
}

function replayCommand (seed: number, file: string, name: string): string {
  return `FUZZ_SEED=${seed} node --import tsx --test --test-name-pattern=${JSON.stringify(name.slice(0, 40))} ${file}`
}

/** fc.assert with the settings; a failure names the seed and the command that replays it. */
export async function assertFuzz<T> (t: TestContext, file: string, settings: FuzzSettings, property: fc.IAsyncProperty<T>): Promise<void> {
  try {
    await fc.assert(property, { seed: settings.seed, numRuns: settings.numRuns, includeErrorInReport: true, ...(settings.path === undefined ? {} : { path: settings.path }) })
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    throw new Error(`fuzz failed (seed ${settings.seed}); replay with ${replayCommand(settings.seed, file, t.name)} (add FUZZ_PATH from below to go straight to the case)\n${message}`, { cause: err })
  }
}

/** Ids as JSON compares them: -0 is 0 (JSON.stringify writes it so). */
export function sameId (a: unknown, b: unknown): boolean {
  return typeof a === 'number' && typeof b === 'number' ? a === b : isDeepStrictEqual(a, b)
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Why `value` is not a JSON-RPC 2.0 response for `ids` (any of them), or undefined when it is:
 * jsonrpc "2.0", one of result (an object) or error (integer code, string message), nothing else.
 */
export function responseProblem (value: unknown, ids: readonly unknown[]): string | undefined {
  if (!isRecord(value)) return 'not an object'
  if (value.jsonrpc !== '2.0') return `jsonrpc is ${JSON.stringify(value.jsonrpc)}`
  const extra = Object.keys(value).filter(k => !['jsonrpc', 'id', 'result', 'error'].includes(k))
  if (extra.length > 0) return `extra members ${extra.join(', ')}`
  if (!ids.some(id => sameId(id, value.id))) return `id ${JSON.stringify(value.id)}, expected ${ids.map(id => JSON.stringify(id)).join(' or ')}`
  if (('result' in value) === ('error' in value)) return 'not exactly one of result and error'
  if ('result' in value) return isRecord(value.result) ? undefined : 'result is not an object'
  const error = value.error
  if (!isRecord(error)) return 'error is not an object'
  if (!Number.isInteger(error.code)) return `error.code ${JSON.stringify(error.code)} is not an integer`
  if (typeof error.message !== 'string') return 'error.message is not a string'
  return undefined
}

export function assertResponse (value: unknown, ids: readonly unknown[], what: string): void {
  const problem = responseProblem(value, ids)
  assert.equal(problem, undefined, `${what}: ${problem ?? ''}: ${JSON.stringify(value)?.slice(0, 500)}`)
}

/** Whether a message is a response (not a request or a notification the server sent meanwhile). */
export function isResponseLike (value: unknown): value is Record<string, unknown> {
  return isRecord(value) && !('method' in value) && ('result' in value || 'error' in value)
}

export interface HttpAnswer {
  status: number
  contentType: string
  /** The JSON body, or every message of an SSE body up to the one looked for. */
  messages: unknown[]
  /** A body that is not JSON (or empty). */
  text?: string
}

/**
 * POSTs `body` and reads the answer: a JSON body, or an SSE body up to a response whose id is in
 * `ids` (or until `enough` says so, e.g. a listen's acknowledgement), then drops the connection.
 * Fails (a hang) when nothing decisive comes within ANSWER_TIMEOUT_MS.
 */
export async function postAndRead (url: string, body: string, headers: Record<string, string>, ids: readonly unknown[], enough: (m: unknown) => boolean = () => false): Promise<HttpAnswer> {
  const controller = new AbortController()
  const timer = setTimeout(() => { controller.abort(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms`)) }, ANSWER_TIMEOUT_MS)
  try {
    const res = await fetch(url, { method: 'POST', headers, body, signal: controller.signal })
    const contentType = res.headers.get('content-type') ?? ''
    if (!contentType.includes('text/event-stream')) {
      const text = await res.text()
      try {
        return { status: res.status, contentType, messages: [JSON.parse(text) as unknown] }
      } catch {
        return { status: res.status, contentType, messages: [], text }
      }
    }
    const messages: unknown[] = []
    const done = (m: unknown): boolean => enough(m) || (isResponseLike(m) && ids.some(id => sameId(id, m.id)))
    for await (const data of sseData(res)) {
      const m = JSON.parse(data) as unknown
      messages.push(m)
      if (done(m)) break
    }
    return { status: res.status, contentType, messages }
  } finally {
    clearTimeout(timer)
    controller.abort()
  }
}

/** Each SSE event of a response body: its name (undefined: message) and data; empty data (priming) skipped. */
export async function * sseEvents (res: Response): AsyncGenerator<{ event: string | undefined, data: string }> {
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of res.body as ReadableStream<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    let end: number
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const data = block.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).replace(/^ /, '')).join('\n')
      if (data !== '') yield { event: /^event: ?(.*)$/m.exec(block)?.[1], data }
    }
  }
}

async function * sseData (res: Response): AsyncGenerator<string> {
  for await (const { event, data } of sseEvents(res)) if (event === undefined || event === 'message') yield data
}

/**
 * The transport-level rules for one POST of a fuzzed body: never 5xx; a well-formed request gets a
 * 200 carrying its response (right id), or a 4xx whose body is a JSON-RPC error (its id, or null when
 * refused before the message was read); anything else gets 202 with no body, or such a 4xx.
 */
export function checkPostAnswer (answer: HttpAnswer, sent: { isRequest: boolean, id?: unknown }, what: string): void {
  assert.ok(answer.status < 500, `${what}: HTTP ${answer.status} for client input: ${JSON.stringify(answer.messages).slice(0, 500)}${answer.text ?? ''}`)
  if (answer.status >= 400) {
    assert.equal(answer.messages.length, 1, `${what}: HTTP ${answer.status} without a JSON-RPC error body: ${answer.text ?? ''}`)
    assertResponse(answer.messages[0], sent.isRequest ? [sent.id, null] : [null], `${what}: HTTP ${answer.status} body`)
    assert.ok('error' in (answer.messages[0] as object), `${what}: HTTP ${answer.status} with a result`)
    return
  }
  if (!sent.isRequest) {
    assert.equal(answer.status, 202, `${what}: a notification or invalid message answered HTTP ${answer.status}: ${JSON.stringify(answer.messages).slice(0, 300)}`)
    return
  }
  assert.equal(answer.status, 200, `${what}: a request answered HTTP ${answer.status}`)
  const response = answer.messages.find(m => isResponseLike(m))
  assert.ok(response !== undefined, `${what}: no response in the answer: ${JSON.stringify(answer.messages).slice(0, 300)}`)
  assertResponse(response, [sent.id], what)
}
/** What the test expects of the text it sends: a request (answered with its id) or anything else. */
export function describeSent (text: string): { isRequest: boolean, id?: unknown, method?: unknown } {
  const value = parsed(text)
  if (!value.ok || !isWellFormedRequest(value.value)) return { isRequest: false }
  return { isRequest: true, id: value.value.id, method: value.value.method }
}

/** Tallies of what the fuzzed messages got (HTTP status, result or error code), printed after a run to show what was reached. */
export class Tally {
  private readonly counts = new Map<string, number>()

  add (key: string): void { this.counts.set(key, (this.counts.get(key) ?? 0) + 1) }

  /** The outcome of one answer: HTTP status, and for a response its result or error code. */
  addAnswer (answer: HttpAnswer): void {
    const response = answer.messages.find(m => isResponseLike(m)) as { error?: { code?: unknown }, result?: { resultType?: unknown } } | undefined
    const code = response?.error?.code
    const named = typeof code === 'number' && code >= -32768 && code <= -32000 ? String(code) : 'other code'
    const result = response?.result?.resultType === 'input_required' ? ' input_required' : ' result'
    this.add(`${answer.status}${response === undefined ? '' : response.error === undefined ? result : ` ${named}`}`)
  }

  toString (): string {
    return [...this.counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}: ${n}`).join(', ')
  }
}
