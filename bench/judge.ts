// Judging targets from one run: each target's measured value, met or NOT met, or "not measured"
// when what it needs was not selected (or gave no result). Shared by the targets of issue 14
// (targets.ts) and of issue 29 (targets-29.ts), which differ only in their specs.
import { driversOf, type PathLetter, type Selectable } from './settings.ts'
import { fmt, table } from './summary.ts'
import type { DriverKind } from './target.ts'

/** A path with one driver, or something else --paths selects (a peer, the floors, a section of the run). */
export type Need = readonly [PathLetter, DriverKind] | Selectable

export interface Spec {
  key: string
  target: string
  cmp: '≤' | '≥'
  limit: number
  unit: string
  digits: number
  needs: Need[]
  value: () => number | undefined
  /** Where the value comes from, when it is not obvious (the worst peer, when it settled). */
  detail?: () => string | undefined
  /**
   * Why the value is not the settled one: `upper`, it can only be higher (met still holds, NOT met
   * is not sure); `unsure`, it may be lower than the truth, so it judges nothing.
   */
  caveat?: () => { kind: 'upper' | 'unsure', why: string } | undefined
}

export interface TargetResult {
  target: string
  limit: string
  value?: number
  unit: string
  measured: string
  /** true / false when measured; undefined when not. */
  met?: boolean
  verdict: string
  detail?: string
}

/** The name of what is missing from the selection, or undefined when everything needed is selected. */
function missing (paths: ReadonlySet<Selectable>, needs: Need[]): string | undefined {
  for (const need of needs) {
    if (typeof need === 'string') {
      if (!paths.has(need)) return need
    } else if (!driversOf(paths, need[0]).includes(need[1])) {
      return need[0] === 'c' && need[1] === 'lean' ? 'c or lean' : need[0]
    }
  }
  return undefined
}

/** a ÷ b, or undefined when either is missing or b is 0. */
export function ratio (a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b
}

/** a − b, or undefined when either is missing. */
export function minus (a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a - b
}

export function judge (paths: ReadonlySet<Selectable>, specs: Spec[]): Record<string, TargetResult> {
  const out: Record<string, TargetResult> = {}
  for (const s of specs) {
    const limit = `${s.cmp} ${Number.isInteger(s.limit * 10) ? String(s.limit) : fmt(s.limit, 2)} ${s.unit}`
    const absent = missing(paths, s.needs)
    const value = absent === undefined ? s.value() : undefined
    if (value === undefined || !Number.isFinite(value)) {
      out[s.key] = { target: s.target, limit, unit: s.unit, measured: '-', verdict: absent !== undefined ? `not measured (path ${absent} not selected)` : 'not measured (no result; see the log)' }
      continue
    }
    const met = s.cmp === '≤' ? value <= s.limit : value >= s.limit
    const caveat = s.caveat?.()
    const measured = `${fmt(value, s.digits)} ${s.unit}`
    const notes = [s.detail?.(), caveat?.why].filter(x => x !== undefined)
    const detail = notes.length === 0 ? undefined : notes.join('; ')
    if (caveat?.kind === 'unsure' || (caveat?.kind === 'upper' && !met)) {
      const verdict = caveat.kind === 'unsure' ? 'not measured (not settled)' : 'NOT met? (an upper bound)'
      out[s.key] = { target: s.target, limit, value, unit: s.unit, measured, verdict, detail }
      continue
    }
    out[s.key] = { target: s.target, limit, value, unit: s.unit, measured, met, verdict: met ? 'met' : 'NOT met', detail }
  }
  return out
}

/** The printed table of judged targets under its title; nothing when there are none. */
export function judgedSection (title: string, targets: Record<string, TargetResult>): string[] {
  const rows = Object.values(targets).map(t => [t.target, t.limit, t.measured, t.verdict, t.detail ?? ''])
  return rows.length === 0 ? [] : [title, table(['target', 'limit', 'measured', 'verdict', 'note'], rows, [0, 3, 4])]
}
