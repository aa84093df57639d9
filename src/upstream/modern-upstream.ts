import { SwitchboardError } from '../errors.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import { type JsonRpcRequest, isRecord } from '../protocol/json-rpc.ts'
import { META_CLIENT_CAPABILITIES, META_LOG_LEVEL } from '../protocol/modern.ts'

/** Rounds of input_required one call may go through before the gateway calls it a loop. */
export const MAX_INPUT_ROUNDS = 16

/** The subscriptions/listen filter for what a 2026-07-28 upstream declared; undefined when it announces no change. */
export function listenFilter (capabilities: Record<string, unknown>): Record<string, boolean> | undefined {
  const changes = (key: string): boolean => isRecord(capabilities[key]) && capabilities[key].listChanged === true
  const filter: Record<string, boolean> = {}
  if (changes('tools')) filter.toolsListChanged = true
  if (changes('prompts')) filter.promptsListChanged = true
  if (changes('resources')) filter.resourcesListChanged = true
  return Object.keys(filter).length === 0 ? undefined : filter
}

/** Asks the client one thing (sampling, elicitation, roots) as a 2025-11-25 server request would. */
export type AskClient = (request: JsonRpcRequest, signal: AbortSignal) => Promise<Record<string, unknown>>

/**
 * A 2026-07-28 upstream answered input_required, and the client speaks 2025-11-25: the gateway asks
 * the client each of the `inputRequests` as the server request it stands for (in the client's
 * session, on the call's stream), then repeats the request with the answers as `inputResponses`
 * and the upstream's `requestState`, until the upstream answers with something else.
 */
export async function answerInputRequired (result: Record<string, unknown>, params: Record<string, unknown> | undefined, send: (params: Record<string, unknown>) => Promise<Record<string, unknown>>, ask: AskClient, signal?: CancelSignal): Promise<Record<string, unknown>> {
  let answer = result
  for (let round = 0; answer.resultType === 'input_required'; round++) {
    if (round >= MAX_INPUT_ROUNDS) throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream asked for input ${MAX_INPUT_ROUNDS} times in one call`)
    const requests = isRecord(answer.inputRequests) ? Object.entries(answer.inputRequests) : []
    if (requests.length === 0) throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', 'the upstream answered input_required without inputRequests')
    const controller = new AbortController()
    const abort = (): void => { controller.abort() }
    signal?.addEventListener('abort', abort)
    try {
      const answered = await Promise.all(requests.map(async ([key, asked]) => {
        if (!isRecord(asked) || typeof asked.method !== 'string') throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream's input request "${key}" has no method`)
        const request: JsonRpcRequest = { jsonrpc: '2.0', id: `input-${round}-${key}`, method: asked.method, ...(isRecord(asked.params) ? { params: asked.params } : {}) }
        return [key, await ask(request, controller.signal)] as const
      }))
      const retry: Record<string, unknown> = { ...params, inputResponses: Object.fromEntries(answered) }
      if (answer.requestState !== undefined) retry.requestState = answer.requestState
      answer = await send(retry)
    } finally {
      signal?.removeEventListener('abort', abort)
    }
  }
  return answer
}

/** A 2026-07-28 request with what its client declared (capabilities, log level), unless it says so itself. */
export function withClient (params: Record<string, unknown> | undefined, client: { clientCapabilities: Readonly<Record<string, unknown>>, logLevel?: string }): Record<string, unknown> {
  const meta: Record<string, unknown> = { ...(isRecord(params?._meta) ? params._meta : {}) }
  meta[META_CLIENT_CAPABILITIES] ??= client.clientCapabilities
  if (client.logLevel !== undefined) meta[META_LOG_LEVEL] ??= client.logLevel
  return { ...params, _meta: meta }
}
