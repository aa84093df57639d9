import type { ConfigDiff } from '../config/config-diff.ts'
import type { ConfigIssue } from '../config/load-config.ts'

/**
 * How a reload ended. `invalid`: the file was unreadable or failed validation, nothing was applied;
 * `error`: it was valid but applying it failed part way (logged; what was applied stays).
 */
export type ReloadResult =
  | { outcome: 'ok', diff: ConfigDiff }
  | { outcome: 'invalid', errors: ConfigIssue[] }
  | { outcome: 'error', errors: ConfigIssue[] }
