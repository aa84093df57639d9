import type { SwitchboardError } from '../errors.ts'
import { type CallToolResult, type ResultSource, ToolCall } from '../gateway/call-chain/tool-call.ts'
import { toToolResult } from '../protocol/error-forms.ts'

/**
 * A result the guardrails withhold, as the client's tool error. On a tools/call the call's outcome
 * becomes 'guardrail' (metrics, audit), not 'tool_error': the tool did not fail, the gateway refused
 * its answer. A tasks/result has no call outcome to set.
 */
export function refuseResult (source: ResultSource, err: SwitchboardError): CallToolResult {
  if (source instanceof ToolCall) source.outcome = 'guardrail'
  return toToolResult(err, { upstream: source.upstream, ...(source.tool === undefined ? {} : { tool: source.tool }) })
}
