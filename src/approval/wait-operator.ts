import type { Metrics } from '../observability/metrics.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import type { CallContext } from '../session/call-context.ts'
import type { OperatorResult, PendingApproval } from './pending-approvals.ts'

/** How often a waiting caller that asked for progress hears that it still waits. */
export const PROGRESS_EVERY_MS = 5000

/**
 * Waits for the operator's decision on `pending`. A caller that sent a progressToken hears at once,
 * and then every `everyMs`, that its call waits for an operator (naming the approval's id, which it
 * may pass on to them); progress that also resets an SDK client's request timeout. The caller
 * cancelling withdraws the approval.
 */
export async function waitForOperator (pending: PendingApproval, ctx: CallContext, params: Record<string, unknown>, metrics: Pick<Metrics, 'notifications'>, everyMs = PROGRESS_EVERY_MS): Promise<OperatorResult> {
  const cancel = (): void => { pending.cancel() }
  if (ctx.signal.aborted) cancel()
  ctx.signal.addEventListener('abort', cancel)
  const stop = progressUntilSettled(pending.id, ctx, params, metrics, everyMs)
  try {
    return await pending.settled
  } finally {
    stop()
    ctx.signal.removeEventListener('abort', cancel)
  }
}

/** Starts the progress notifications (when the caller asked for them); answers how to stop them. */
function progressUntilSettled (id: string, ctx: CallContext, params: Record<string, unknown>, metrics: Pick<Metrics, 'notifications'>, everyMs: number): () => void {
  const token = isRecord(params._meta) ? params._meta.progressToken : undefined
  const related = ctx.related
  if ((typeof token !== 'string' && typeof token !== 'number') || related === undefined) return () => {}
  let progress = 0
  const send = (): void => {
    progress++
    related({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress, message: `waiting for an operator's approval (approval ${id})` } })
    metrics.notifications.inc({ method: 'notifications/progress' })
  }
  send()
  const timer = setInterval(send, everyMs)
  timer.unref()
  return () => { clearInterval(timer) }
}
