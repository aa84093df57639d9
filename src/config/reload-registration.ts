import type { ConfigDiff, LiveSection } from './config-diff.ts'
import type { GatewayConfig } from './schema.ts'

/**
 * What a registration follows: a live section (applied when `ConfigDiff.applied` names it),
 * `upstreams` (when one was added, removed or changed), or `*` (every reload, for what reads
 * several sections or the upstream list as a whole).
 */
export type ReloadSection = LiveSection | 'upstreams' | '*'

/**
 * One thing a reload applies. The reloader walks one list of these in order; a new reloadable
 * section is one more entry, usually a `Reloadable.replace()`. What is read from the config in
 * force on each use (`admin.token`, `metrics.token`, `shutdown`) needs no entry.
 */
export interface ReloadRegistration {
  section: ReloadSection | readonly ReloadSection[]
  apply: (next: GatewayConfig, diff: ConfigDiff) => void
}

/** Whether the diff touches `section`. */
export function touches (section: ReloadSection, diff: ConfigDiff): boolean {
  if (section === '*') return true
  if (section === 'upstreams') return diff.upstreams.added.length + diff.upstreams.removed.length + diff.upstreams.changed.length > 0
  return diff.applied.includes(section)
}

/**
 * Applies `next` to every registration whose section the diff touches, in list order. The first
 * that throws ends the walk: what was applied before it stays, what comes after it is not applied,
 * and the error goes to the reloader, which answers `outcome: 'error'`.
 */
export function applyReload (registrations: Iterable<ReloadRegistration>, next: GatewayConfig, diff: ConfigDiff): void {
  for (const registration of registrations) {
    const sections = typeof registration.section === 'string' ? [registration.section] : registration.section
    if (sections.some(section => touches(section, diff))) registration.apply(next, diff)
  }
}
