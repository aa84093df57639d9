import { definitionStrings } from './definition-strings.ts'
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
  const findings: Finding[] = []
  for (const { path, text, position } of definitionStrings(tool)) {
    const invisible = findInvisible(text)
    if (invisible !== undefined) findings.push({ rule: 'invisible_unicode', path, reason: describeInvisible(invisible) })
    for (const hit of findInstructions(text)) findings.push({ rule: 'hidden_instructions', path, reason: `${hit.reason}: ${excerpt(hit.match)}` })
    for (const ref of findShadowing(text, context.others)) {
      findings.push({ rule: 'shadowing', path, reason: `names tool ${JSON.stringify(ref.tool)} of upstream ${JSON.stringify(ref.upstream)}` })
    }
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
