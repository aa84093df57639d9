import type { Principal } from '../auth/principal.ts'
import type { PolicyRule } from '../config/access-schema.ts'

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

/** A rule's `when` and `annotations`, compiled once when the config loads. */
export interface CallCondition {
  matches: (facts: CallFacts) => boolean
}

// What an untrusted server's silence means: a hint left out takes the value that trusts the tool least.
const LEAST_TRUSTED: Readonly<Record<string, unknown>> = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }

/** The tool's annotations with every standard hint it left out at its least trusting value. */
export function effectiveAnnotations (annotations: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  return { ...LEAST_TRUSTED, ...annotations }
}

/** The rule's call-time conditions, or undefined when it has none. */
export function compileCallCondition (rule: PolicyRule, _index: number): CallCondition | undefined {
  const wanted = rule.annotations
  if (wanted === undefined && rule.when === undefined) return undefined
  // TODO(issue 27, policy helper): compile rule.when with @bufbuild/cel here.
  return {
    matches (facts) {
      if (wanted === undefined) return true
      const actual = effectiveAnnotations(facts.tool.annotations)
      return Object.entries(wanted).every(([key, value]) => actual[key] === value)
    }
  }
}
