import { definitionStrings, type DefinitionString } from './definition-strings.ts'
import { excerpt, type Finding } from './finding.ts'
import { findForeignHosts, type HostMatcher } from './foreign-hosts.ts'
import { findInstructions } from './hidden-instructions.ts'
import { describeInvisible, findInvisible } from './invisible-unicode.ts'
import { findShadowing, type OtherTools } from './shadowing.ts'

export interface ScanContext {
  readonly allowedHost: HostMatcher
  readonly maxDescriptionChars: number
  readonly others: OtherTools
}

/**
 * Every finding of one tool definition, in a stable order (by string, then rule). Pure: the same
 * definition and context always give the same findings.
 */
export function scanTool (tool: Readonly<Record<string, unknown>>, context: ScanContext): Finding[] {
  const strings = definitionStrings(tool)
  return [...scanOwnText(strings, context), ...scanShadowing(strings, context.others)]
}

/** The findings that depend on the definition and the config only (not on the rest of the catalog). */
export function scanOwnText (strings: readonly DefinitionString[], context: Omit<ScanContext, 'others'>): Finding[] {
  const findings: Finding[] = []
  for (const { path, text, position } of strings) {
    const invisible = findInvisible(text)
    if (invisible !== undefined) findings.push({ rule: 'invisible_unicode', path, reason: describeInvisible(invisible) })
    for (const hit of findInstructions(text)) findings.push({ rule: 'hidden_instructions', path, reason: `${hit.reason}: ${excerpt(hit.match)}` })
    if (position !== 'descriptive') continue
    for (const host of findForeignHosts(text, context.allowedHost)) {
      findings.push({ rule: 'foreign_host', path, reason: `URL to ${JSON.stringify(host)}, not in scanning.allowedHosts` })
    }
    const length = [...text].length
    if (length > context.maxDescriptionChars) {
      findings.push({ rule: 'oversized', path, reason: `${length} characters, more than scanning.maxDescriptionChars (${context.maxDescriptionChars})` })
    }
  }
  return findings
}

/** The shadowing findings: they change whenever other upstreams' tools come or go. */
export function scanShadowing (strings: readonly DefinitionString[], others: OtherTools): Finding[] {
  const findings: Finding[] = []
  if (others.names.size === 0) return findings
  for (const { path, text } of strings) {
    for (const ref of findShadowing(text, others)) {
      findings.push({ rule: 'shadowing', path, reason: `names tool ${JSON.stringify(ref.tool)} of upstream ${JSON.stringify(ref.upstream)}` })
    }
  }
  return findings
}
