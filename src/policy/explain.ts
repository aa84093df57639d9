import type { Principal } from '../auth/principal.ts'
import type { GatewayConfig } from '../config/schema.ts'
import { createAccessPolicy, type AccessKind } from './access-policy.ts'
import { matchingRateRules } from './rate-limiter.ts'

export interface ExplainQuery {
  principal: string
  /** Roles to assume; by default those of the API key with this id, if any. */
  roles?: readonly string[]
  kind: AccessKind
  name: string
}

export interface Explanation { allowed: boolean, lines: string[] }

/**
 * `switchboard explain`: which policy rule decides whether a principal may see and call a tool
 * (prompt, resource) and why, and which rate limits would count the call. Pure: reads the config only.
 */
export function explainAccess (config: GatewayConfig, query: ExplainQuery): Explanation {
  const key = config.auth?.apiKeys.find(k => k.id === query.principal)
  const roles = query.roles ?? key?.roles ?? []
  const principal: Principal = { id: query.principal, roles, via: key !== undefined && query.roles === undefined ? 'api-key' : 'jwt' }
  const source = query.roles !== undefined ? 'given with --role' : key !== undefined ? 'from auth.apiKeys' : 'none given; pass --role for a JWT principal'
  const policy = createAccessPolicy(config.policies)
  const singular = query.kind.slice(0, -1)
  const lines = [
    `principal: ${principal.id} (roles: ${roles.length === 0 ? 'none' : roles.join(', ')}; ${source})`,
    `${singular}: ${query.name}`,
    `policy: ${config.policies.rules.length} rule(s), default ${config.policies.default}`,
    ...policy.explain(principal, query.kind, query.name).map(l => `  ${l}`)
  ]
  const allowed = policy.decide(principal, query.kind, query.name).allowed
  lines.push(allowed
    ? `=> ALLOWED: ${principal.id} sees ${singular} ${query.name} in its lists and may use it`
    : `=> DENIED: ${singular} ${query.name} is hidden from ${principal.id}, and using it is answered as if it did not exist`)
  if (query.kind === 'tools' && allowed) {
    const limits = matchingRateRules(config.rateLimits, principal, query.name)
    if (limits.length === 0) lines.push('rate limits: none apply')
    else {
      lines.push(`rate limits (store ${config.rateLimits.store}; every one must pass):`)
      for (const { rule, index } of limits) lines.push(`  rateLimits.rules[${index}]: ${rule.limit} call(s) per ${rule.windowMs / 1000} s, counted per ${rule.key}`)
    }
  }
  return { allowed, lines }
}
