import type { Principal } from '../auth/principal.ts'
import type { AccessView } from '../catalog/catalog-view.ts'
import { createMatcher } from '../catalog/naming.ts'
import { DEFAULT_APPROVAL, type ApprovalConfig, type PoliciesConfig, type PolicyRule } from '../config/access-schema.ts'
import { compileCallCondition, type CallCondition, type CallFacts } from './call-conditions.ts'
import { explainRules, type ExplainCall, type RuleExplanation } from './explain-rules.ts'
import { createPrincipalMatcher } from './principal-match.ts'

export type { CallFacts }

/** What a policy rule names: exposed tool names, exposed prompt names, resource URIs and URI templates. */
export type AccessKind = 'tools' | 'prompts' | 'resources'
export const ACCESS_KINDS: readonly AccessKind[] = ['tools', 'prompts', 'resources']

export interface AccessDecision {
  readonly allowed: boolean
  /** The rule that decided; undefined when none matched and the default did. */
  readonly ruleIndex?: number
}

/** What a policy decides for one tools/call, arguments known: the rule's effect, and who approves an ask. */
export interface CallDecision {
  readonly effect: 'allow' | 'deny' | 'ask'
  /** The rule that decided; undefined when none matched and the default did. */
  readonly ruleIndex?: number
  readonly approval?: ApprovalConfig
  /** The deciding rule's `when` could not be evaluated on this call, and the rule failed closed (why). */
  readonly conditionError?: string
}

export interface AccessPolicy {
  readonly unrestricted: boolean
  /**
   * Some rule depends on the call itself (when, annotations) or asks a human (effect ask): the
   * call path must ask `decideCall` after the view allowed the tool. False: the view's answer is final.
   */
  readonly decidesAtCall: boolean
  /** The decision for one tools/call: every rule in order, its conditions evaluated on the call's facts. */
  decideCall: (facts: CallFacts) => CallDecision
  /** The one decision function: lists (what a client sees) and calls (what it may use) both ask it. */
  decide: (principal: Principal, kind: AccessKind, name: string) => AccessDecision
  viewFor: (principal: Principal) => AccessView
  /**
   * Which rule decides and why, line by line, for `switchboard explain`; with `call`, rules with
   * `when` are evaluated on its arguments.
   */
  explain: (principal: Principal, kind: AccessKind, name: string, call?: ExplainCall) => RuleExplanation
}

export interface CompiledRule {
  readonly index: number
  readonly rule: PolicyRule
  readonly principals: (principal: Principal) => boolean
  readonly names: Readonly<Record<AccessKind, ((name: string) => boolean) | undefined>>
  /** when and annotations: undefined for a rule that depends on no more than principal and name. */
  readonly condition: CallCondition | undefined
}

// Resource URIs are unbounded (templates); a view forgets its answers rather than grow without bound.
const MAX_REMEMBERED = 10_000
const MAX_VIEWS = 10_000

function principalKey (p: Principal): string {
  return `${p.via}\0${p.id}\0${p.roles.join('\0')}`
}

export function createAccessPolicy (config: PoliciesConfig): AccessPolicy {
  const rules: CompiledRule[] = config.rules.map((rule, index) => ({
    index,
    rule,
    principals: createPrincipalMatcher(rule.principals),
    names: {
      tools: rule.tools === undefined ? undefined : createMatcher(rule.tools),
      prompts: rule.prompts === undefined ? undefined : createMatcher(rule.prompts),
      resources: rule.resources === undefined ? undefined : createMatcher(rule.resources)
    },
    condition: compileCallCondition(rule, index)
  }))
  const defaultAllows = config.default === 'allow'
  const unrestricted = defaultAllows && rules.every(r => r.rule.effect === 'allow' && r.condition === undefined)
  const decidesAtCall = rules.some(r => r.rule.effect === 'ask' || r.condition !== undefined)

  // Lists (and the view) cannot know a call's arguments: a rule with conditions may or may not
  // match, so one that could let the call through (allow, ask) shows the tool, and a conditional
  // deny is passed over; the call itself is decided by decideCall.
  function decide (principal: Principal, kind: AccessKind, name: string): AccessDecision {
    for (const r of rules) {
      const names = r.names[kind]
      if (names === undefined || !r.principals(principal) || !names(name)) continue
      if (r.condition !== undefined && r.rule.effect === 'deny') continue
      return { allowed: r.rule.effect !== 'deny', ruleIndex: r.index }
    }
    return { allowed: defaultAllows }
  }

  function decideCall (facts: CallFacts): CallDecision {
    for (const r of rules) {
      const names = r.names.tools
      if (names === undefined || !r.principals(facts.principal) || !names(facts.tool.name)) continue
      const outcome = r.condition?.evaluate(facts)
      if (outcome !== undefined && !outcome.matched) continue
      const failed = outcome?.when !== undefined && 'error' in outcome.when ? { conditionError: outcome.when.error } : {}
      return r.rule.effect === 'ask'
        ? { effect: 'ask', ruleIndex: r.index, approval: r.rule.approval ?? DEFAULT_APPROVAL, ...failed }
        : { effect: r.rule.effect, ruleIndex: r.index, ...failed }
    }
    return { effect: defaultAllows ? 'allow' : 'deny' }
  }

  const everything: AccessView = { unrestricted: true, allows: () => true }
  const views = new Map<string, AccessView>()

  function viewFor (principal: Principal): AccessView {
    if (unrestricted) return everything
    const key = principalKey(principal)
    let view = views.get(key)
    if (view !== undefined) return view
    const remembered = new Map<string, boolean>()
    view = {
      unrestricted: false,
      allows (kind, name) {
        const k = `${kind}\0${name}`
        let allowed = remembered.get(k)
        if (allowed === undefined) {
          allowed = decide(principal, kind, name).allowed
          if (remembered.size >= MAX_REMEMBERED) remembered.clear()
          remembered.set(k, allowed)
        }
        return allowed
      }
    }
    if (views.size >= MAX_VIEWS) views.clear()
    views.set(key, view)
    return view
  }

  function explain (principal: Principal, kind: AccessKind, name: string, call?: ExplainCall): RuleExplanation {
    return explainRules(rules, config.default, principal, kind, name, call)
  }

  return { unrestricted, decidesAtCall, decide, decideCall, viewFor, explain }
}
