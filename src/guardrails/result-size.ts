import { SwitchboardError } from '../errors.ts'
import type { ResultStep } from '../gateway/call-chain/tool-call.ts'
import { jsonBytes } from '../gateway/audit.ts'
import type { Metrics } from '../observability/metrics.ts'
import { refuseResult } from './refusals.ts'

/**
 * guardrails.results.maxBytes: a result larger than this, as JSON, is withheld with a tool error
 * instead of flooding the model's context. Measured with the audit's jsonBytes, which remembers the
 * size of the object it measured: the audit line of a result that passes does not write it again.
 */
export function resultSizeStep (maxBytes: number, metrics: Pick<Metrics, 'oversizeResults'>): ResultStep {
  return async (result, source) => {
    const bytes = jsonBytes(result)
    if (bytes <= maxBytes) return result
    metrics.oversizeResults.inc({ upstream: source.upstream })
    const name = source.tool === undefined ? 'the tool' : `tool "${source.tool}"`
    return refuseResult(source, new SwitchboardError('SB_ERR_RESULT_TOO_LARGE', `the result of ${name} is ${bytes} bytes, more than the ${maxBytes} bytes guardrails.results.maxBytes allows; it was withheld`, { details: { bytes, maxBytes } }))
  }
}
