import { z } from 'zod'
import { httpUrl } from './access-schema.ts'

// The `scanning` and `guardrails` blocks: what the gateway checks in tool definitions, in call
// arguments and in results, and the external guardrail hook. Policy rules (effect ask, when,
// annotations) are in access-schema.ts.

export const DEFAULT_MAX_DESCRIPTION_CHARS = 4000
/** The largest answer the guardrail hook may send back when results.maxBytes is not set (a replaced result fits in it). */
export const DEFAULT_HOOK_ANSWER_BYTES = 16 * 1024 * 1024
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 2000

export const scanningSchema = z.strictObject({
  mode: z.enum(['off', 'warn', 'quarantine']).default('warn')
    .describe('off: tool definitions are not scanned; warn: findings are logged and counted; quarantine: a tool with findings is held like a changed pinned tool until approved (switchboard pins approve)'),
  allowedHosts: z.array(z.string().min(1)).default([])
    .describe('hosts (globs, *.example.com) a tool definition may name in a URL; any other host is a finding'),
  maxDescriptionChars: z.number().int().min(100).max(1_000_000).default(DEFAULT_MAX_DESCRIPTION_CHARS)
    .describe('a description (or title) longer than this is a finding')
})

export const SCANNING_DEFAULTS = { mode: 'warn', allowedHosts: [], maxDescriptionChars: DEFAULT_MAX_DESCRIPTION_CHARS } as const

const webhookSchema = z.strictObject({
  url: httpUrl('must be an http(s) URL').describe('where the gateway POSTs each call (and result) for a verdict'),
  timeoutMs: z.number().int().min(10).max(60_000).default(DEFAULT_WEBHOOK_TIMEOUT_MS).describe('a hook slower than this has failed (see failMode)'),
  failMode: z.enum(['open', 'closed']).default('closed')
    .describe('when the hook cannot answer (timeout, error, bad answer): open lets the call through, closed refuses it'),
  on: z.array(z.enum(['request', 'result'])).min(1).default(['request']).describe('which side of a call is sent'),
  // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax, shown to the user
  headers: z.record(z.string(), z.string()).default({}).describe('sent with every POST (e.g. Authorization: "Bearer ${HOOK_TOKEN}")')
})

export const guardrailsSchema = z.strictObject({
  results: z.strictObject({
    secrets: z.enum(['off', 'redact', 'block']).default('off')
      .describe('secrets in tool results (text content and every string of structuredContent): redact as [redacted:<kind>], or block the result with a tool error'),
    maxBytes: z.number().int().min(1024).optional()
      .describe('a tool result larger than this (JSON bytes) is refused with a tool error instead of flooding the model\'s context; unset (the default), results pass whatever their size')
  }).default({ secrets: 'off' }).describe('checks on what a tool returns'),
  arguments: z.strictObject({
    secrets: z.enum(['off', 'block']).default('off').describe('a call whose arguments carry a secret is refused before it reaches the upstream')
  }).default({ secrets: 'off' }).describe('checks on what a call sends'),
  webhook: webhookSchema.optional().describe('an external guardrail (Presidio, a DLP service, your own checks)')
})

export const GUARDRAILS_DEFAULTS = { results: { secrets: 'off' }, arguments: { secrets: 'off' } } as const

export type ScanningConfig = z.output<typeof scanningSchema>
export type GuardrailsConfig = z.output<typeof guardrailsSchema>
export type WebhookConfig = NonNullable<GuardrailsConfig['webhook']>
