import { approvePin, getOwn, pendingFindings, stateOf, type PinData, type PinRecord, type PinState } from './pin-book.ts'
import type { PinStore } from './pin-store.ts'
import type { Finding } from '../guardrails/scanning/finding.ts'
import type { StoredDefinition } from './tool-definition.ts'

// Listing and approving pins, shared by `switchboard pins` and the admin API (GET /admin/pins,
// POST /admin/pins/approve), so both show and do the same.

/** Which pending definitions to approve: `all`, or `tools` of exactly one upstream. */
export interface PinSelection {
  upstreams?: readonly string[]
  tools?: readonly string[]
  all?: boolean
}

export interface ApprovedPin { upstream: string, tool: string, from: string | null, to: string }

export interface ApproveOutcome {
  approved: ApprovedPin[]
  /** Named tools that could not be approved: `<upstream>/<tool>: no such pinned tool | nothing pending`. */
  problems: string[]
}

/** Why a selection cannot be approved, or undefined when it can. */
export function selectionProblem (selection: PinSelection): string | undefined {
  const tools = selection.tools ?? []
  const upstreams = selection.upstreams ?? []
  if (selection.all === true && tools.length > 0) return '--all and --tool exclude each other'
  if (selection.all !== true && tools.length === 0) return 'approve needs --tool <name> (one or more) or --all'
  if (tools.length > 0 && upstreams.length !== 1) return '--tool needs exactly one --upstream <name>'
  return undefined
}

/** Writes the approved records to the store; every selected tool with nothing pending is a problem (unless `all`). */
export async function approvePins (store: PinStore, data: PinData, selection: PinSelection, now: Date): Promise<ApproveOutcome> {
  const approved: ApprovedPin[] = []
  const problems: string[] = []
  const upstreams = selection.upstreams ?? Object.keys(data).sort()
  for (const upstream of upstreams) {
    const records = getOwn(data, upstream) ?? {}
    const tools = selection.tools ?? Object.keys(records).sort()
    for (const tool of tools) {
      const record = getOwn(records, tool)
      const next = record === undefined ? undefined : approvePin(record, now)
      if (record === undefined || next === undefined) {
        if (selection.all !== true) problems.push(`${upstream}/${tool}: ${record === undefined ? 'no such pinned tool' : 'nothing pending'}`)
        continue
      }
      await store.save(upstream, tool, next)
      approved.push({ upstream, tool, from: record.fingerprint, to: next.fingerprint as string })
    }
  }
  return { approved, problems }
}

export interface PinView {
  tool: string
  state: PinState
  fingerprint: string | null
  pinnedAt: string | null
  /**
   * The pinned definition (name and the fingerprinted fields, or `{ truncated, bytes }` past 64 KB);
   * null when none is pinned yet or the record predates kept definitions ("definition not recorded").
   */
  definition: StoredDefinition | null
  /** The definition whose scan findings were approved, when it is the pinned one. */
  scanApproved?: boolean
  pending?: { fingerprint: string, seenAt: string, description?: string, findings: Finding[], heldBy: 'pinning' | 'scan', definition: StoredDefinition | null }
}

export interface UpstreamPinsView { upstream: string, inConfig: boolean, tools: PinView[] }

function pinView (tool: string, record: PinRecord): PinView {
  const view: PinView = { tool, state: stateOf(record), fingerprint: record.fingerprint, pinnedAt: record.pinnedAt, definition: record.definition ?? null }
  if (record.scanApproved !== undefined && record.scanApproved === record.fingerprint) view.scanApproved = true
  const { pending } = record
  if (pending !== undefined) {
    view.pending = { fingerprint: pending.fingerprint, seenAt: pending.seenAt, findings: pendingFindings(pending), heldBy: pending.heldBy === 'scan' ? 'scan' : 'pinning', definition: pending.definition ?? null }
    if (typeof pending.description === 'string') view.pending.description = pending.description
  }
  return view
}

/** The pins of the configured upstreams (and of any other the store holds), sorted, as data. */
export function pinsView (data: PinData, configured: readonly string[], only?: readonly string[]): UpstreamPinsView[] {
  return [...new Set([...configured, ...Object.keys(data)])]
    .filter(u => only === undefined || only.includes(u)).sort()
    .map((upstream) => {
      const records = getOwn(data, upstream) ?? {}
      return { upstream, inConfig: configured.includes(upstream), tools: Object.keys(records).sort().map(tool => pinView(tool, records[tool] as PinRecord)) }
    })
}
