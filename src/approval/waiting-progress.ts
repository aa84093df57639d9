import type { Metrics } from '../observability/metrics.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import type { CallContext } from '../session/call-context.ts'

/** How often a waiting caller that asked for progress hears that it still waits. */
export const PROGRESS_EVERY_MS = 5000

/**
 * While a call waits for a human: a caller that sent a progressToken hears at once, and then every
 * `everyMs`, what its call waits for. Progress also resets the request timeout of an SDK client
 * that asks for it (resetTimeoutOnProgress), so a long wait need not end on the client's side.
 * Answers how to stop.
 */
export function progressWhileWaiting (ctx: CallContext, params: Record<string, unknown>, message: string, metrics: Pick<Metrics, 'notifications'>, everyMs = PROGRESS_EVERY_MS): () => void {
  const token = isRecord(params._meta) ? params._meta.progressToken : undefined
  const related = ctx.related
  if ((typeof token !== 'string' && typeof token !== 'number') || related === undefined) return () => {}
  let progress = 0
  const send = (): void => {
    progress++
    related({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress, message } })
    metrics.notifications.inc({ method: 'notifications/progress' })
  }
  send()
  const timer = setInterval(send, everyMs)
  timer.unref()
  return () => { clearInterval(timer) }
}
