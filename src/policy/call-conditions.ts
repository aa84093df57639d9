import type { Principal } from '../auth/principal.ts'
import type { PolicyRule } from '../config/access-schema.ts'
import { compileCel, type CelCondition, type ConditionValue } from './cel-expression.ts'

/** What a rule's call-time conditions see of one tools/call. */
export interface CallFacts {
  readonly principal: Principal
  /** The verified token's claims, when the caller came with a JWT; empty otherwise. */
  readonly claims: Readonly<Record<string, unknown>>
  readonly tool: {
    /** The exposed name the client called. */
    readonly name: string
    readonly upstream: string
    /** The tool's annotations as its upstream lists them (empty when it gives none). */
    readonly annotations: Readonly<Record<string, unknown>>
  }
  readonly args: Readonly<Record<string, unknown>>
}

/** What a rule's conditions made of one call: whether it matched, and each condition's own answer. */
export interface ConditionOutcome {
  readonly matched: boolean
  /** The annotations' verdict; undefined for a rule without annotations. */
  readonly annotations?: boolean
  /** The `when` expression's value or error; undefined without `when`, or when the annotations already failed. */
  readonly when?: ConditionValue
}

/** A rule's `when` and `annotations`, compiled once when the config loads. */
export interface CallCondition {
  /** The `when` source, for explanations. */
  readonly when: string | undefined
  matches: (facts: CallFacts) => boolean
  evaluate: (facts: CallFacts) => ConditionOutcome
  /** The `when` expression alone (undefined without one), for `switchboard explain`, which cannot know annotations. */
  evaluateWhen: (facts: CallFacts) => ConditionValue | undefined
}

// What an untrusted server's silence means: a hint left out takes the value that trusts the tool least.
const LEAST_TRUSTED: Readonly<Record<string, unknown>> = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }

/** The tool's annotations with every standard hint it left out at its least trusting value. */
export function effectiveAnnotations (annotations: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  return { ...LEAST_TRUSTED, ...annotations }
}

/**
 * The rule's call-time conditions, or undefined when it has none. A `when` that cannot be evaluated
 * on a call (a missing argument, a value of the wrong type, facts too large) fails closed: a deny
 * rule then matches and refuses the call; an ask rule matches and a human decides (falling through
 * could reach a broader allow); an allow rule does not match, so the call goes on to the next rule.
 * The config loader has compiled every `when` already: one that does not compile here is a bug.
 */
export function compileCallCondition (rule: PolicyRule, index: number): CallCondition | undefined {
  const wanted = rule.annotations
  if (wanted === undefined && rule.when === undefined) return undefined
  let when: CelCondition | undefined
  if (rule.when !== undefined) {
    const compiled = compileCel(rule.when)
    if ('error' in compiled) throw new Error(`policies.rules[${index}].when: ${compiled.error}`)
    when = compiled
  }
  const errorMatches = rule.effect !== 'allow'
  const evaluate = (facts: CallFacts): ConditionOutcome => {
    let annotations: boolean | undefined
    if (wanted !== undefined) {
      const actual = effectiveAnnotations(facts.tool.annotations)
      annotations = Object.entries(wanted).every(([key, value]) => actual[key] === value)
      if (!annotations) return { matched: false, annotations }
    }
    if (when === undefined) return { matched: true, annotations }
    const value = when.evaluate(facts)
    return { matched: 'error' in value ? errorMatches : value.value, annotations, when: value }
  }
  return { when: rule.when, evaluate, matches: facts => evaluate(facts).matched, evaluateWhen: facts => when?.evaluate(facts) }
}
