import type { Logger } from 'pino'
import { DEFAULT_HOOK_ANSWER_BYTES, type GuardrailsConfig } from '../config/guardrails-schema.ts'
import { secretRegistry } from '../config/secret-registry.ts'
import type { CallStep, ResultStep } from '../gateway/call-chain/tool-call.ts'
import type { Metrics } from '../observability/metrics.ts'
import { resultSizeStep } from './result-size.ts'
import { createPatternDetector, type SecretDetector } from './secret-detector.ts'
import { argumentSecretsStep, resultSecretsStep } from './secret-guards.ts'
import { createGuardrailHook } from './webhook-client.ts'
import { hookRequestStep, hookResultStep } from './webhook-guards.ts'

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
  /** The secret detector; the documented pattern list (secret-patterns.ts) unless a test or a library brings another. */
  readonly detector?: SecretDetector | undefined
}

const HOOK_OUTCOMES = ['allow', 'deny', 'replace', 'timeout', 'error', 'invalid'] as const

const PLAIN_HEADERS: ReadonlySet<string> = new Set(['accept', 'content-type', 'user-agent'])

/** Room for the hook's verdict around a replaced result, which may be as large as any result. */
const HOOK_ANSWER_SLACK_BYTES = 64 * 1024

/**
 * The guardrails a config asks for; none when it asks for none. The order is part of the contract:
 * call side: secrets in arguments, then the hook (request) — the hook never sees a secret the
 * gateway refuses; result side: the size cap first (nothing scans a flood), then the hook
 * (result), then secrets (a result the hook replaced is scanned too).
 */
export function createGuards (deps: GuardDeps): Guards {
  const { config, metrics, log } = deps
  const call: CallStep[] = []
  const results: ResultStep[] = []
  const wantsDetector = config.arguments.secrets !== 'off' || config.results.secrets !== 'off'
  const detector = wantsDetector ? deps.detector ?? createPatternDetector() : undefined
  const webhook = config.webhook
  const hook = webhook === undefined ? undefined : { hook: createGuardrailHook(webhook, (config.results.maxBytes ?? DEFAULT_HOOK_ANSWER_BYTES) + HOOK_ANSWER_SLACK_BYTES), config: webhook, metrics, log }
  // The hook's headers often carry its token, under any name: the logger hides a registered value
  // wherever it would show. Not the few that name a format, which would hide words in every log line.
  if (webhook !== undefined) {
    // Every series the alert on a failing hook reads exists from the start.
    for (const on of webhook.on) for (const outcome of HOOK_OUTCOMES) metrics.guardrailWebhook.inc({ on, outcome }, 0)
    for (const [name, value] of Object.entries(webhook.headers)) if (!PLAIN_HEADERS.has(name.toLowerCase())) secretRegistry.registerValue(value)
  }

  if (detector !== undefined && config.arguments.secrets === 'block') call.push(argumentSecretsStep(detector, metrics, log))
  if (hook !== undefined && webhook?.on.includes('request') === true) call.push(hookRequestStep(hook))

  // Off unless set: results pass untouched by default, whatever their size.
  if (config.results.maxBytes !== undefined) results.push(resultSizeStep(config.results.maxBytes, metrics))
  if (hook !== undefined && webhook?.on.includes('result') === true) results.push(hookResultStep(hook))
  if (detector !== undefined && config.results.secrets !== 'off') results.push(resultSecretsStep(config.results.secrets, detector, metrics, log))
  return { call, results }
}
