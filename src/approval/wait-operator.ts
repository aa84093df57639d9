import type { Metrics } from '../observability/metrics.ts'
import type { CallContext } from '../session/call-context.ts'
import type { OperatorResult, PendingApproval } from './pending-approvals.ts'
import { progressWhileWaiting } from './waiting-progress.ts'

/**
 * Waits for the operator's decision on `pending`, with progress that names the approval's id (the
 * caller may pass it on to the operator). The caller cancelling withdraws the approval.
 */
export async function waitForOperator (pending: PendingApproval, ctx: CallContext, params: Record<string, unknown>, metrics: Pick<Metrics, 'notifications'>, everyMs?: number): Promise<OperatorResult> {
  const cancel = (): void => { pending.cancel() }
  if (ctx.signal.aborted) cancel()
  ctx.signal.addEventListener('abort', cancel)
  const stop = progressWhileWaiting(ctx, params, `waiting for an operator's approval (approval ${pending.id})`, metrics, everyMs)
  try {
    return await pending.settled
  } finally {
    stop()
    ctx.signal.removeEventListener('abort', cancel)
  }
}
