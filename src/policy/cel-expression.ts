import { createRequire } from 'node:module'
import type * as Cel from '@bufbuild/cel'
import type { CelEnv, CelInput } from '@bufbuild/cel'
import type * as CelExt from '@bufbuild/cel/ext'
import { DEFAULT_MAX_JSON_DEPTH } from '../protocol/json-depth.ts'
import type { CallFacts } from './call-conditions.ts'

// A policy rule's `when`: a CEL expression over principal, tool and args, checked when the config
// loads (syntax, variables, fields, functions) so a typo is a config error at its path, and
// evaluated per call on a bounded copy of the call's facts.

type Expr = ReturnType<typeof Cel.parse>['expr']

/** The variables a `when` sees, and the fields of the two whose shape the gateway fixes. */
const FIELDS: Readonly<Record<string, readonly string[] | undefined>> = {
  principal: ['id', 'roles', 'claims'],
  tool: ['name', 'upstream', 'annotations'],
  args: undefined
}

// Type names are identifiers in CEL (`type(args.n) == int`).
const TYPE_NAMES = new Set(['int', 'uint', 'double', 'bool', 'string', 'bytes', 'list', 'map', 'null_type', 'type', 'dyn'])
// Operators the planner runs itself rather than through the function table.
const BUILT_IN = new Set(['_&&_', '_||_', '_?_:_', '_[_]', '@not_strictly_false'])

/** Beyond these, a call's facts are not evaluated at all (an evaluation error). */
export const MAX_CONDITION_DEPTH = DEFAULT_MAX_JSON_DEPTH
export const MAX_CONDITION_VALUES = 10_000

interface CelLibrary { cel: typeof Cel, env: CelEnv, functions: ReadonlySet<string> }
let library: CelLibrary | undefined

/**
 * The CEL library, loaded when the first expression is compiled: a gateway whose policy has no
 * `when` never loads it (about 20 MB of resident memory with protobuf). Synchronously, through
 * its CommonJS build, as the config schema's checks are synchronous.
 */
function celLibrary (): CelLibrary {
  if (library === undefined) {
    const require = createRequire(import.meta.url)
    const cel = require('@bufbuild/cel') as typeof Cel
    const { strings } = require('@bufbuild/cel/ext') as typeof CelExt
    const env = cel.celEnv({ funcs: strings })
    library = { cel, env, functions: new Set([...env.funcs].map(f => f.name)) }
  }
  return library
}

export type ConditionValue = { value: boolean } | { error: string }

export interface CelCondition {
  readonly source: string
  evaluate: (facts: CallFacts) => ConditionValue
}

/** The expression compiled, or the reason it cannot be (for the config error). */
export function compileCel (source: string): CelCondition | { error: string } {
  const { cel, env, functions } = celLibrary()
  let program
  try {
    let parsed
    try {
      parsed = cel.parse(source)
    } catch (err: unknown) {
      if (err instanceof RangeError) throw err
      return { error: `syntax error ${(err as Error).message.replace(/^<input>:/, 'at ')}` }
    }
    const problem = checkExpr(parsed.expr, new Set(), functions)
    if (problem !== undefined) return { error: problem }
    program = cel.plan(env, parsed)
  } catch (err: unknown) {
    // Parsing, checking and planning all recurse: an expression nested thousands deep overflows them.
    if (err instanceof RangeError) return { error: 'the expression nests too deeply' }
    throw err
  }
  return {
    source,
    evaluate (facts) {
      let bindings
      try {
        bindings = bindingsOf(facts)
      } catch (err: unknown) {
        return { error: (err as Error).message }
      }
      const result = program(bindings)
      if (cel.isCelError(result)) return { error: result.message }
      if (typeof result !== 'boolean') return { error: 'the expression did not give true or false' }
      return { value: result }
    }
  }
}

/** The first thing the expression names that no call could have; undefined when all is known. */
function checkExpr (expr: Expr | undefined, bound: ReadonlySet<string>, functions: ReadonlySet<string>): string | undefined {
  const kind = expr?.exprKind
  switch (kind?.case) {
    case undefined:
    case 'constExpr':
      return undefined
    case 'identExpr': {
      const name = kind.value.name
      if (bound.has(name) || Object.hasOwn(FIELDS, name) || TYPE_NAMES.has(name)) return undefined
      return `unknown variable ${name} (known: principal, tool, args)`
    }
    case 'selectExpr': {
      const { operand, field } = kind.value
      if (operand?.exprKind.case === 'identExpr' && !bound.has(operand.exprKind.value.name)) {
        const known = FIELDS[operand.exprKind.value.name]
        if (known !== undefined && !known.includes(field)) return `${operand.exprKind.value.name} has no field ${field} (it has ${known.join(', ')})`
      }
      return checkExpr(operand, bound, functions)
    }
    case 'callExpr': {
      const call = kind.value
      if (!BUILT_IN.has(call.function) && !functions.has(call.function)) return `unknown function ${call.function}`
      return checkAll([call.target, ...call.args], bound, functions)
    }
    case 'listExpr':
      return checkAll(kind.value.elements, bound, functions)
    case 'structExpr':
      if (kind.value.messageName !== '') return `message types are not available (${kind.value.messageName})`
      return checkAll(kind.value.entries.flatMap(e => [e.keyKind.case === 'mapKey' ? e.keyKind.value : undefined, e.value]), bound, functions)
    case 'comprehensionExpr': {
      const c = kind.value
      const inner = new Set([...bound, c.iterVar, c.iterVar2, c.accuVar].filter(v => v !== ''))
      return checkAll([c.iterRange, c.accuInit], bound, functions) ?? checkAll([c.loopCondition, c.loopStep, c.result], inner, functions)
    }
  }
}

function checkAll (exprs: ReadonlyArray<Expr | undefined>, bound: ReadonlySet<string>, functions: ReadonlySet<string>): string | undefined {
  for (const e of exprs) {
    const problem = checkExpr(e, bound, functions)
    if (problem !== undefined) return problem
  }
  return undefined
}

// One call's facts are converted once however many rules evaluate them.
const converted = new WeakMap<CallFacts, Record<string, CelInput> | Error>()

function bindingsOf (facts: CallFacts): Record<string, CelInput> {
  let bindings = converted.get(facts)
  if (bindings === undefined) {
    try {
      bindings = convert(facts)
    } catch (err: unknown) {
      bindings = err as Error
    }
    converted.set(facts, bindings)
  }
  if (bindings instanceof Error) throw bindings
  return bindings
}

function convert (facts: CallFacts): Record<string, CelInput> {
  const budget = { left: MAX_CONDITION_VALUES }
  return {
    principal: new Map<string, CelInput>([
      ['id', facts.principal.id],
      ['roles', [...facts.principal.roles]],
      ['claims', toCel(facts.claims, 1, budget)]
    ]),
    tool: new Map<string, CelInput>([
      ['name', facts.tool.name],
      ['upstream', facts.tool.upstream],
      ['annotations', toCel(facts.tool.annotations, 1, budget)]
    ]),
    args: toCel(facts.args, 1, budget)
  }
}

/**
 * A JSON value as CEL sees it: objects as maps, whole numbers as int (so `args.n % 2` and list
 * indexes work; CEL compares int and double with each other), other numbers as double. Bounded in
 * depth and in values, so neither a deeply nested nor a huge argument makes an evaluation run long.
 */
function toCel (value: unknown, depth: number, budget: { left: number }): CelInput {
  if (--budget.left < 0) throw new Error(`the call's facts hold more than ${MAX_CONDITION_VALUES} values; not evaluated`)
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      return Number.isSafeInteger(value) ? BigInt(value) : value
    case 'object':
      break
    default:
      return null
  }
  if (depth > MAX_CONDITION_DEPTH) throw new Error(`the call's facts nest deeper than ${MAX_CONDITION_DEPTH} levels; not evaluated`)
  if (Array.isArray(value)) return value.map(v => toCel(v, depth + 1, budget))
  const map = new Map<string, CelInput>()
  for (const [k, v] of Object.entries(value)) map.set(k, toCel(v, depth + 1, budget))
  return map
}
