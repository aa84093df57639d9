import type { Attributes } from '@opentelemetry/api'

// Span names and attributes after the OpenTelemetry conventions for MCP: `{mcp.method.name} {target}`
// with the tool or prompt name as target. Never arguments, never a session id or credential.

function targetOf (method: string, params: Record<string, unknown>): string | undefined {
  if ((method === 'tools/call' || method === 'prompts/get') && typeof params.name === 'string') return params.name
  return undefined
}

export function spanName (method: string, params: Record<string, unknown>): string {
  const target = targetOf(method, params)
  return target === undefined ? method : `${method} ${target}`
}

export function spanAttributes (method: string, params: Record<string, unknown>): Attributes {
  const attributes: Attributes = { 'mcp.method.name': method }
  const target = targetOf(method, params)
  if (method === 'tools/call' && target !== undefined) {
    attributes['gen_ai.tool.name'] = target
    attributes['gen_ai.operation.name'] = 'execute_tool'
  }
  if (method === 'prompts/get' && target !== undefined) attributes['gen_ai.prompt.name'] = target
  if (method.startsWith('resources/') && typeof params.uri === 'string') attributes['mcp.resource.uri'] = params.uri
  return attributes
}
