import { request } from 'undici'
import { z } from 'zod'
import type { WebhookConfig } from '../config/guardrails-schema.ts'
import { CallCancelledError } from '../errors.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'

/** Which side of a call the hook is asked about (guardrails.webhook.on). */
export type HookPhase = 'request' | 'result'

/** Why the hook gave no verdict: it did not answer in time, could not be reached or answered non-2xx, or answered something unreadable. */
export type HookFailure = 'timeout' | 'error' | 'invalid'

export type HookVerdict =
  | { readonly decision: 'allow' }
  | { readonly decision: 'deny', readonly reason: string | undefined }
  /** The arguments (request) or the result (result) to use instead. */
  | { readonly decision: 'replace', readonly value: Record<string, unknown> }
  /**
   * No verdict: guardrails.webhook.failMode decides. `detail` is for the log: no header, no body;
   * `unknownFields`, the answer's fields no verdict of its kind has (a hook author's typo or a
   * misremembered form, `{ "decision": "allow", "arguments": … }`, which must not pass for an allow).
   */
  | { readonly decision: 'failed', readonly failure: HookFailure, readonly detail: string, readonly unknownFields?: readonly string[] }

/** A deny reason is the hook's message to the client; longer ones are cut, not refused. */
const MAX_REASON_CHARS = 1000

const reason = z.string().transform(s => s.slice(0, MAX_REASON_CHARS)).optional()
const toolResult = z.looseObject({
  content: z.array(z.looseObject({ type: z.string() })),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional()
})
// Strict: a field the verdict does not have makes the answer invalid rather than being dropped
// (an allow carrying rewritten `arguments` would otherwise send the originals without a word).
// The replacement result stays loose: a tool result may carry members this gateway does not know.
const ANSWERS = {
  request: z.discriminatedUnion('decision', [
    z.strictObject({ decision: z.literal('allow') }),
    z.strictObject({ decision: z.literal('deny'), reason }),
    z.strictObject({ decision: z.literal('replace'), arguments: z.record(z.string(), z.unknown()) })
  ]),
  result: z.discriminatedUnion('decision', [
    z.strictObject({ decision: z.literal('allow') }),
    z.strictObject({ decision: z.literal('deny'), reason }),
    z.strictObject({ decision: z.literal('replace'), result: toolResult })
  ])
} as const

/** What a log line may quote of the fields a hook made up: a few, each cut short. */
const MAX_UNKNOWN_FIELDS = 10
const MAX_FIELD_CHARS = 100

export interface GuardrailHook {
  /** POSTs `payload` and reads the verdict; throws only CallCancelledError, when the call's client cancelled it. */
  ask: (phase: HookPhase, payload: Record<string, unknown>, cancel: CancelSignal) => Promise<HookVerdict>
}

const failed = (failure: HookFailure, detail: string): HookVerdict => ({ decision: 'failed', failure, detail })

/**
 * The external guardrail over HTTP: one POST of JSON per question, bounded by timeoutMs (the whole
 * exchange, answer body included) and by `maxAnswerBytes`. Redirects are not followed (a 3xx is an
 * error). The configured headers go on the request and nowhere else: they may hold the hook's token.
 */
export function createGuardrailHook (config: WebhookConfig, maxAnswerBytes: number): GuardrailHook {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' }
  for (const [name, value] of Object.entries(config.headers)) {
    if (name.toLowerCase() !== 'content-type') headers[name] = value
  }
  return {
    async ask (phase, payload, cancel) {
      const controller = new AbortController()
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        controller.abort()
      }, config.timeoutMs)
      const onCancel = (): void => { controller.abort() }
      cancel.addEventListener('abort', onCancel, { once: true })
      try {
        const answer = await post(config.url, headers, JSON.stringify(payload), controller.signal, maxAnswerBytes)
        return typeof answer === 'string' ? failed(answer === 'too large' ? 'invalid' : 'error', answer) : verdictOf(phase, answer.text)
      } catch (err: unknown) {
        if (cancel.aborted) throw new CallCancelledError()
        if (timedOut) return failed('timeout', `no answer within ${config.timeoutMs} ms`)
        return failed('error', describe(err))
      } finally {
        clearTimeout(timer)
        cancel.removeEventListener('abort', onCancel)
      }
    }
  }
}

/** The answer's text, or why there is none ('HTTP 503', 'too large'). */
async function post (url: string, headers: Record<string, string>, body: string, signal: AbortSignal, maxBytes: number): Promise<{ text: string } | string> {
  const response = await request(url, { method: 'POST', headers, body, signal })
  if (response.statusCode < 200 || response.statusCode > 299) {
    await response.body.dump().catch(() => {})
    return `HTTP ${response.statusCode}`
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of response.body) {
    const buffer = chunk as Buffer
    size += buffer.length
    if (size > maxBytes) {
      response.body.destroy()
      return 'too large'
    }
    chunks.push(buffer)
  }
  return { text: Buffer.concat(chunks).toString('utf8') }
}

function verdictOf (phase: HookPhase, text: string): HookVerdict {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return failed('invalid', 'the answer is not JSON')
  }
  const parsed = ANSWERS[phase].safeParse(json)
  if (!parsed.success) {
    const { issues } = parsed.error
    const unknownFields = issues.flatMap(i => i.code === 'unrecognized_keys' ? i.keys.map(key => [...i.path, key].join('.').slice(0, MAX_FIELD_CHARS)) : []).slice(0, MAX_UNKNOWN_FIELDS)
    // The unknown fields first: the detail is cut, and they are what a hook author most needs to read.
    const problems = [
      ...(unknownFields.length === 0 ? [] : [`unknown field${unknownFields.length === 1 ? '' : 's'} ${unknownFields.map(f => JSON.stringify(f)).join(', ')}`]),
      ...issues.filter(i => i.code !== 'unrecognized_keys').map(i => `${i.path.join('.') || '(root)'}: ${i.message}`)
    ]
    const detail = `the answer is not a ${phase} verdict: ${problems.join('; ')}`.slice(0, 300)
    return unknownFields.length === 0 ? failed('invalid', detail) : { decision: 'failed', failure: 'invalid', detail, unknownFields }
  }
  const answer = parsed.data
  switch (answer.decision) {
    case 'allow': return { decision: 'allow' }
    case 'deny': return { decision: 'deny', reason: answer.reason }
    default: return { decision: 'replace', value: 'arguments' in answer ? answer.arguments : answer.result }
  }
}

/** A connection failure in words: its code (ECONNREFUSED, UND_ERR_SOCKET) and message, never the request. */
function describe (err: unknown): string {
  if (!(err instanceof Error)) return 'request failed'
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? `${code}: ${err.message}` : err.message
}
