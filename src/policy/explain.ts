import type { Principal } from '../auth/principal.ts'
import type { GatewayConfig } from '../config/schema.ts'
import { exposedPattern, traceName, type NameTrace } from '../catalog/trace-name.ts'
import { createAccessPolicy, type AccessKind } from './access-policy.ts'
import type { ExplainedDecision } from './explain-rules.ts'
import { matchingRateRules } from './rate-limiter.ts'
import { visibleText } from '../protocol/visible-text.ts'

export interface ExplainQuery {
  principal: string
  /** Roles to assume; by default those of the API key with this id, if any. */
  roles?: readonly string[]
  kind: AccessKind
  name: string
  /** A call's arguments (--args): rules with `when` are evaluated on them. Tools only. */
  args?: Readonly<Record<string, unknown>>
}

/** allowed: exit 0; denied: 3; unknown: no configured upstream could expose the name, 4; ask: a call waits for approval, 5. */
export type Verdict = 'allowed' | 'denied' | 'unknown' | 'ask'

export interface Explanation { verdict: Verdict, lines: string[] }

/** `files (its tool read_file or read), git (its tool read)`; for resources the upstreams alone. */
function describeExposers (trace: NameTrace, singular: string): string {
  const byUpstream = new Map<string, string[]>()
  for (const { upstream, own } of trace.exposers) byUpstream.set(upstream, [...(byUpstream.get(upstream) ?? []), own])
  return [...byUpstream].map(([upstream, owns]) => singular === 'resource' ? upstream : `${upstream} (its ${singular} ${owns.join(' or ')})`).join(', ')
}

/** Why nothing configured could expose the name: renames, filters, or the names each upstream exposes. */
function unknownVerdict (config: GatewayConfig, query: ExplainQuery, trace: NameTrace, singular: string): string {
  const none = `=> UNKNOWN: no configured upstream exposes a ${singular} named ${query.name}`
  if (trace.invalid !== undefined) return `${none}: ${trace.invalid}`
  const reasons = [
    ...trace.renamed.map(r => `upstream ${r.upstream} renames its ${singular} ${r.own} to ${r.exposed}`),
    ...trace.hidden.map(h => `upstream ${h.upstream} would, but ${h.reason}`)
  ]
  if (reasons.length > 0) return `${none}: ${reasons.join('; ')}`
  const upstreams = config.upstreams.length === 0
    ? 'no upstreams are configured'
    : `upstreams: ${config.upstreams.map(u => `${u.name} → ${exposedPattern(u, query.kind, config.catalog.separator)}`).join(', ')}`
  return `${none} (${upstreams})`
}

/**
 * `switchboard explain`: which policy rule decides whether a principal may see and call a tool
 * (prompt, resource) and why, and which rate limits would count the call. Pure: reads the config
 * only, so a name no configured upstream could expose is unknown rather than allowed.
 */
export function explainAccess (config: GatewayConfig, query: ExplainQuery): Explanation {
  const key = config.auth?.apiKeys.find(k => k.id === query.principal)
  const roles = query.roles ?? key?.roles ?? []
  const principal: Principal = { id: query.principal, roles, via: key !== undefined && query.roles === undefined ? 'api-key' : 'jwt' }
  const source = query.roles !== undefined ? 'given with --role' : key !== undefined ? 'from auth.apiKeys' : 'none given; pass --role for a JWT principal'
  const policy = createAccessPolicy(config.policies)
  const singular = query.kind.slice(0, -1)
  const trace = traceName(config.upstreams, config.catalog, query.kind, query.name)
  const call = query.kind === 'tools' && query.args !== undefined ? { args: query.args, upstream: trace.exposers[0]?.upstream ?? '' } : undefined
  const rules = policy.explain(principal, query.kind, query.name, call)
  const lines = [
    `principal: ${principal.id} (roles: ${roles.length === 0 ? 'none' : roles.join(', ')}; ${source})`,
    `${singular}: ${query.name}`,
    ...(trace.exposers.length > 0 ? [`exposed by: ${describeExposers(trace, singular)}`] : []),
    ...callNotes(query, policy.decidesAtCall),
    `policy: ${config.policies.rules.length} rule(s), default ${config.policies.default}`,
    ...rules.lines.map(l => `  ${l}`)
  ]
  const allowed = policy.decide(principal, query.kind, query.name).allowed
  if (trace.exposers.length === 0) {
    lines.push(unknownVerdict(config, query, trace, singular), `  (the policy alone would ${allowed ? 'allow' : 'deny'} it)`)
    return shown('unknown', lines)
  }
  const verdict: Verdict = !allowed || rules.decision === 'deny' ? 'denied' : rules.decision === 'ask' ? 'ask' : 'allowed'
  lines.push(verdictLine(verdict, allowed, rules.decision, principal.id, `${singular} ${query.name}`))
  if (query.kind === 'tools' && verdict !== 'denied') {
    const limits = matchingRateRules(config.rateLimits, principal, query.name)
    if (limits.length === 0) lines.push('rate limits: none apply')
    else {
      lines.push(`rate limits (store ${config.rateLimits.store}; every one must pass):`)
      for (const { rule, index } of limits) lines.push(`  rateLimits.rules[${index}]: ${rule.limit} call(s) per ${rule.windowMs / 1000} s, counted per ${rule.key}`)
    }
  }
  return shown(verdict, lines)
}

/** A principal, a name or an argument may carry a U+202E (copied from a token or a log): the terminal gets it escaped. */
function shown (verdict: Verdict, lines: readonly string[]): Explanation {
  return { verdict, lines: lines.map(line => visibleText(line)) }
}

/** What explain can and cannot know of a call, said before the rules. */
function callNotes (query: ExplainQuery, decidesAtCall: boolean): string[] {
  if (query.kind !== 'tools') return []
  if (query.args !== undefined) {
    return [
      `arguments: ${JSON.stringify(query.args)}`,
      '  (principal.claims and tool.annotations are empty here: explain reads only the config)'
    ]
  }
  return decidesAtCall ? ['rules with when or annotations are decided at call time: pass --args \'<json>\' to evaluate when'] : []
}

function verdictLine (verdict: Verdict, listed: boolean, decision: ExplainedDecision, who: string, what: string): string {
  if (!listed) return `=> DENIED: ${what} is hidden from ${who}, and using it is answered as if it did not exist`
  if (verdict === 'denied') return `=> DENIED: ${who} sees ${what} in its lists, but a call with these arguments is refused (SB_ERR_POLICY_DENIED)`
  if (verdict === 'ask') return `=> ASK: ${who} sees ${what} in its lists; a call is held until it is approved`
  if (decision === 'call-time') return `=> ALLOWED IN LISTS: ${who} sees ${what}; whether a call goes through is decided at call time by the conditions above`
  return `=> ALLOWED: ${who} sees ${what} in its lists and may use it`
}
