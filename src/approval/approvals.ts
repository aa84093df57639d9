import type { Logger } from 'pino'
import type { AuditConfig } from '../config/access-schema.ts'
import { type FieldTest, createFieldTest, redactFields } from '../gateway/audit.ts'
import type { CallStep } from '../gateway/call-chain/tool-call.ts'
import type { Metrics } from '../observability/metrics.ts'
import { approvalStep } from './approval-step.ts'
import { type OperatorApprovals, PendingApprovals } from './pending-approvals.ts'
import { SessionApprovals } from './session-approvals.ts'

export interface ApprovalsDeps {
  metrics: Pick<Metrics, 'approvals' | 'approvalsPending' | 'notifications'>
  /** The audit config in force: arguments shown to whoever approves are redacted as its lines redact them. */
  audit: () => AuditConfig
  log?: Logger | undefined
  /** Calls that may wait for an operator at once (MAX_PENDING_APPROVALS). */
  maxPending?: number | undefined
  /** How often a caller waiting for an operator hears progress (PROGRESS_EVERY_MS). */
  progressEveryMs?: number | undefined
}

/** Effect ask, as the gateway owns it: the call step, the admin surface's view, and the session lifecycle. */
export interface Approvals {
  /** The approval step of the tools/call chain (src/gateway/call-tool.ts places it). */
  readonly step: CallStep
  /** The calls waiting for an operator: GET and POST /admin/approvals. */
  readonly operator: OperatorApprovals
  /** A session ended (or left this replica): its "approve for this session" answers go. */
  sessionEnded: (sessionId: string) => void
  /** The policies changed: every "approve for this session" answer is forgotten, so the new rules ask afresh. */
  policiesChanged: () => void
}

export function createApprovals (deps: ApprovalsDeps): Approvals {
  const sessions = new SessionApprovals()
  const pending = new PendingApprovals({ max: deps.maxPending })
  // The field test is built once per audit config (a reload brings a new one).
  const tests = new WeakMap<AuditConfig, FieldTest>()
  const redact = (args: unknown): unknown => {
    const config = deps.audit()
    let test = tests.get(config)
    if (test === undefined) {
      test = createFieldTest(config.redact, config.redactPatterns)
      tests.set(config, test)
    }
    return redactFields(args ?? {}, test, 0)
  }
  const operator: OperatorApprovals = {
    list: () => pending.list(),
    decide: (id, decision) => {
      const outcome = pending.decide(id, decision)
      if (outcome !== undefined) deps.log?.info({ approval: id, outcome }, 'an operator decided an approval')
      return outcome
    }
  }
  return {
    step: approvalStep({ metrics: deps.metrics, sessions, pending, redact, log: deps.log, progressEveryMs: deps.progressEveryMs }),
    operator,
    sessionEnded: (id) => { sessions.forgetSession(id) },
    policiesChanged: () => { sessions.clear() }
  }
}
