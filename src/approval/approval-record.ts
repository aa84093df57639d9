/** Who is asked to approve a call a policy rule with effect ask held. */
export type ApprovalVia = 'client' | 'operator'

/**
 * How an approval ended, as switchboard_approvals_total counts it: approved (once), approved_session
 * (for the rest of the session), denied (deny, decline or cancel), timeout, unavailable (nobody could
 * be asked), cancelled (the caller gave up the call).
 */
export type ApprovalOutcome = 'approved' | 'approved_session' | 'denied' | 'timeout' | 'unavailable' | 'cancelled'

/** What the audit line says of a call's approval (`approval` field). */
export interface ApprovalRecord {
  readonly via: ApprovalVia
  readonly outcome: ApprovalOutcome
  /** From the question to the answer; 0 when nobody was asked. */
  readonly waitedMs: number
  /** The index of the ask rule. */
  readonly rule: number
  /**
   * Who decided: 'client' (the user at the calling client), 'operator' (the admin API), 'session'
   * (an earlier "approve for this session" covered the call); absent when nobody decided.
   */
  readonly by?: 'client' | 'operator' | 'session'
  /** The operator's reason, when they gave one. */
  readonly reason?: string
  /** The pending approval's id (operator), as GET /admin/approvals listed it. */
  readonly id?: string
}
