import type { Principal } from '../auth/principal.ts'
import { createMatcher } from '../catalog/naming.ts'
import { DEFAULT_APPROVAL, type PolicyRule } from '../config/access-schema.ts'
import type { AccessKind, CompiledRule } from './access-policy.ts'
import type { CallFacts } from './call-conditions.ts'
import type { ConditionValue } from './cel-expression.ts'
import { matchPrincipal } from './principal-match.ts'

/** What `switchboard explain` knows of a call: the arguments given with --args, and where the tool comes from. */
export interface ExplainCall {
  readonly args: Readonly<Record<string, unknown>>
  /** The upstream that exposes the tool, when the config tells. */
  readonly upstream: string
}

/**
 * The rules' verdict as far as the config tells: `call-time` when a rule that may decide depends on
 * what only a call has (arguments without --args, or the tool's annotations, which only the running
 * gateway sees in the upstream's listing).
 */
export type ExplainedDecision = 'allow' | 'deny' | 'ask' | 'call-time'

export interface RuleExplanation {
  readonly lines: string[]
  readonly decision: ExplainedDecision
}

const UNKNOWN_ANNOTATIONS = 'unknown here (explain reads only the config; the tool\'s annotations come from its upstream\'s listing), decided at call time'

/** Which rule decides and why, line by line: `switchboard explain`. */
export function explainRules (rules: readonly CompiledRule[], fallback: 'allow' | 'deny', principal: Principal, kind: AccessKind, name: string, call?: ExplainCall): RuleExplanation {
  const lines: string[] = []
  const singular = kind.slice(0, -1)
  // Effects of earlier rules whose conditions only a call can settle: the verdict is known anyway
  // when they all have the effect that decides otherwise.
  const pending = new Set<PolicyRule['effect']>()
  const settle = (effect: PolicyRule['effect'], first = ' (first matching rule wins)'): RuleExplanation => {
    const known = [...pending].every(e => e === effect)
    lines.push(pending.size === 0 ? `decision: ${effect}${first}` : known ? `decision: ${effect}, whichever of these rules decides` : `decision: ${effect}, unless a condition above holds on the call`)
    return { lines, decision: known ? effect : 'call-time' }
  }
  const facts: CallFacts | undefined = call === undefined
    ? undefined
    : { principal, claims: {}, tool: { name, upstream: call.upstream, annotations: {} }, args: call.args }
  for (const r of rules) {
    const label = `rule ${r.index}${r.rule.description === undefined ? '' : ` (${r.rule.description})`}`
    const globs = r.rule[kind]
    if (globs === undefined) {
      lines.push(`${label}: skipped, it names no ${kind}`)
      continue
    }
    const who = r.rule.principals.map(p => matchPrincipal(p, principal)).find(m => m !== undefined)
    if (who === undefined) {
      lines.push(`${label}: skipped, principals [${r.rule.principals.join(', ')}] do not match ${describe(principal)}`)
      continue
    }
    const what = globs.find(g => createMatcher([g])(name))
    if (what === undefined) {
      lines.push(`${label}: skipped, ${kind} [${globs.join(', ')}] do not match ${name}`)
      continue
    }
    const effect = r.rule.effect.toUpperCase()
    if (r.condition === undefined) {
      lines.push(`${label}: ${effect} — ${who}; ${what} matches ${singular} ${name}`, ...approvalLines(r.rule))
      return settle(r.rule.effect)
    }
    lines.push(`${label}: ${effect} if its conditions hold — ${who}; ${what} matches ${singular} ${name}`, ...approvalLines(r.rule))
    const when = facts === undefined ? undefined : r.condition.evaluateWhen(facts)
    if (r.rule.when !== undefined) {
      lines.push(when === undefined
        ? `    when: ${r.rule.when} — decided at call time (pass --args '<json>' to evaluate it)`
        : `    when: ${r.rule.when} => ${describeValue(when, r.rule)}`)
    }
    if (r.rule.annotations !== undefined) lines.push(`    annotations: ${describeAnnotations(r.rule.annotations)} — ${UNKNOWN_ANNOTATIONS}`)
    const whenHolds = when === undefined ? undefined : 'error' in when ? r.rule.effect !== 'allow' : when.value
    if (whenHolds === false) {
      lines.push('    does not apply to these arguments: the next rules decide')
      continue
    }
    if (whenHolds === true && r.rule.annotations === undefined) return settle(r.rule.effect)
    pending.add(r.rule.effect)
    lines.push(r.rule.effect === 'deny'
      ? '    lists pass over a conditional deny; when it does not hold on a call, the next rules decide'
      : '    lists show the tool; when it does not hold on a call, the next rules decide')
  }
  lines.push(`no rule matched: default ${fallback}`)
  return settle(fallback, '')
}

function approvalLines (rule: PolicyRule): string[] {
  if (rule.effect !== 'ask') return []
  const approval = rule.approval ?? DEFAULT_APPROVAL
  const who = approval.via === 'client' ? 'the calling client is asked (elicitation)' : 'an operator decides in the admin API'
  return [`    approval: via ${approval.via}, timeoutMs ${approval.timeoutMs} — ${who}; no answer in time is a denial`]
}

function describeValue (value: ConditionValue, rule: PolicyRule): string {
  if (!('error' in value)) return String(value.value)
  const closed = rule.effect === 'allow' ? 'an allow rule does not match' : `a${rule.effect === 'ask' ? 'n ask' : ' deny'} rule fails closed and matches`
  return `error: ${value.error} (${closed})`
}

function describeAnnotations (annotations: Readonly<Record<string, unknown>>): string {
  return `{ ${Object.entries(annotations).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')} }`
}

function describe (p: Principal): string {
  return p.roles.length === 0 ? `${p.id} (no roles)` : `${p.id} (roles ${p.roles.join(', ')})`
}
