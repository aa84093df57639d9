import type { Logger } from 'pino'
import { type CallContext, askClient } from '../session/call-context.ts'
import { type ClientDecision, readDecision } from './approval-question.ts'

/** How asking the calling client ended: its decision, or why there is none. */
export type ClientAnswer = ClientDecision | 'timeout' | 'cancelled' | 'failed'

/**
 * Asks the calling session's client (elicitation/create; a 2026-07-28 client gets it as
 * input_required, askClient does either) and waits up to `timeoutMs`. The question is withdrawn
 * (notifications/cancelled to the client) when the time is up or the caller cancels its call.
 */
export async function askClientApproval (ctx: CallContext, question: Record<string, unknown>, sessionChoice: boolean, timeoutMs: number, log?: Logger): Promise<ClientAnswer> {
  if (ctx.signal.aborted) return 'cancelled'
  const asking = new AbortController()
  let timedOut = false
  const cancel = (): void => { asking.abort(new Error('the call was cancelled')) }
  ctx.signal.addEventListener('abort', cancel)
  const timer = setTimeout(() => {
    timedOut = true
    asking.abort(new Error('no approval in time'))
  }, timeoutMs)
  try {
    const answer = await askClient(ctx, 'elicitation/create', question, asking.signal)
    return readDecision(answer, sessionChoice)
  } catch (err: unknown) {
    if (ctx.signal.aborted) return 'cancelled'
    if (timedOut) return 'timeout'
    log?.debug({ err }, 'the client could not be asked to approve a call')
    return 'failed'
  } finally {
    clearTimeout(timer)
    ctx.signal.removeEventListener('abort', cancel)
  }
}
