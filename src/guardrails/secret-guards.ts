import type { Logger } from 'pino'
import { SwitchboardError } from '../errors.ts'
import type { CallStep, ResultStep } from '../gateway/call-chain/tool-call.ts'
import type { Metrics } from '../observability/metrics.ts'
import { toToolResult } from '../protocol/error-forms.ts'
import { refuseResult } from './refusals.ts'
import type { SecretDetector } from './secret-detector.ts'
import { kindsOf, scanResult, scanValue, type SecretCounts } from './secret-scan.ts'

type SecretMetrics = Pick<Metrics, 'secretsFound'>

function countFound (metrics: SecretMetrics, upstream: string, where: 'arguments' | 'result', found: SecretCounts): void {
  for (const [kind, n] of found) metrics.secretsFound.inc({ upstream, kind, where }, n)
}

/**
 * guardrails.arguments.secrets: block. A call whose arguments hold a secret anywhere is refused
 * before anything (the hook, an approver, the upstream) sees them; the error names the kinds only.
 */
export function argumentSecretsStep (detector: SecretDetector, metrics: SecretMetrics, log: Logger): CallStep {
  return (call, next) => {
    const { found } = scanValue(call.params.arguments, detector, false)
    if (found.size === 0) return next(call)
    const kinds = kindsOf(found)
    countFound(metrics, call.upstream, 'arguments', found)
    call.outcome = 'guardrail'
    log.warn({ callId: call.ctx.callId, upstream: call.upstream, tool: call.tool, kinds }, 'a call\'s arguments carry a secret; refused')
    const err = new SwitchboardError('SB_ERR_SECRET_IN_ARGUMENTS', `the arguments of tool "${call.tool}" carry a secret (${kinds.join(', ')}); the call was not sent to the upstream`, { details: { kinds } })
    return Promise.resolve(toToolResult(err, { upstream: call.upstream, tool: call.tool }))
  }
}

/**
 * guardrails.results.secrets: redact replaces each secret in the result's text and structured
 * content by `[redacted:<kind>]`; block withholds the whole result with a tool error naming the kinds.
 */
export function resultSecretsStep (mode: 'redact' | 'block', detector: SecretDetector, metrics: SecretMetrics, log: Logger): ResultStep {
  const redact = mode === 'redact'
  return async (result, source) => {
    const scanned = scanResult(result, detector, redact)
    if (scanned.found.size === 0) return result
    const kinds = kindsOf(scanned.found)
    countFound(metrics, source.upstream, 'result', scanned.found)
    const where = { callId: source.ctx.callId, upstream: source.upstream, tool: source.tool, kinds }
    if (redact) {
      log.info(where, 'secrets in a tool result redacted')
      return scanned.value
    }
    log.warn(where, 'a tool result carries a secret; withheld')
    const name = source.tool === undefined ? 'the tool' : `tool "${source.tool}"`
    return refuseResult(source, new SwitchboardError('SB_ERR_SECRET_IN_RESULT', `the result of ${name} carries a secret (${kinds.join(', ')}); it was withheld`, { details: { kinds } }))
  }
}
