import { isRecord } from '../protocol/json-rpc.ts'
import { visibleText } from '../protocol/visible-text.ts'

/** The choices the user is offered, as the `decision` property's values. */
export const CHOICES = {
  once: 'approve_once',
  session: 'approve_session',
  deny: 'deny'
} as const

const TITLES: Readonly<Record<string, string>> = {
  [CHOICES.once]: 'Approve once',
  [CHOICES.session]: 'Approve for this session',
  [CHOICES.deny]: 'Deny'
}

/** Arguments are shown up to this many characters (as JSON); the rest is cut, never the redaction. */
export const MAX_SHOWN_ARGUMENT_CHARS = 2000

/** What the question is about. */
export interface ApprovalSubject {
  readonly tool: string
  readonly upstream: string
  /** Already redacted. */
  readonly arguments: unknown
  /** Offer "approve for this session" (not for a session that lives for one request). */
  readonly sessionChoice: boolean
  /**
   * The client's protocol revision: from 2025-11-25 a titled choice is `oneOf` of const/title and
   * the request names its mode; 2025-06-18 knew only `enum` with `enumNames`.
   */
  readonly protocolVersion: string | undefined
}

/** The client's answer as a decision. */
export type ClientDecision = 'once' | 'session' | 'deny'

/** Whether a client declared form elicitation: `{}` is form mode (as before modes existed), `{ url: {} }` alone is not. */
export function declaresFormElicitation (capabilities: Readonly<Record<string, unknown>>): boolean {
  const elicitation = capabilities.elicitation
  if (!isRecord(elicitation)) return false
  return elicitation.form !== undefined || elicitation.url === undefined
}

function shownArguments (args: unknown): string {
  let text: string
  try {
    text = JSON.stringify(args ?? {}, null, 2)
  } catch {
    text = '(the arguments cannot be shown)'
  }
  const cut = text.length > MAX_SHOWN_ARGUMENT_CHARS ? `${text.slice(0, MAX_SHOWN_ARGUMENT_CHARS)}\n… (cut)` : text
  // JSON.stringify leaves bidirectional and zero-width characters raw: a U+202E in an argument
  // would reorder the question the user reads ("evil" shown as "live").
  return visibleText(cut, { multiline: true })
}

const LEGACY_ELICITATION = new Set(['2025-06-18'])

/**
 * The form-mode elicitation/create params: a message naming the tool, its upstream and its
 * (redacted) arguments, and one required string property `decision`, which the 2025-11-25 spec
 * allows (form fields are primitives; a titled single choice).
 */
export function approvalQuestion (subject: ApprovalSubject): Record<string, unknown> {
  const values = subject.sessionChoice ? [CHOICES.once, CHOICES.session, CHOICES.deny] : [CHOICES.once, CHOICES.deny]
  const legacy = subject.protocolVersion !== undefined && LEGACY_ELICITATION.has(subject.protocolVersion)
  const decision = legacy
    ? { type: 'string', title: 'Decision', enum: values, enumNames: values.map(v => TITLES[v] as string) }
    : { type: 'string', title: 'Decision', oneOf: values.map(v => ({ const: v, title: TITLES[v] as string })) }
  const message = `Approve a call of tool "${visibleText(subject.tool)}" on upstream "${visibleText(subject.upstream)}"?\n` +
    `The gateway's policy asks a human before this tool runs. Arguments (secrets hidden):\n${shownArguments(subject.arguments)}`
  return {
    ...(legacy ? {} : { mode: 'form' }),
    message,
    requestedSchema: { type: 'object', properties: { decision }, required: ['decision'] }
  }
}

/**
 * The decision an elicitation answer carries: accept with a known choice; decline, cancel, an
 * choice that was not offered or anything malformed is a denial (never a silent allow).
 */
export function readDecision (answer: Record<string, unknown>, sessionChoice: boolean): ClientDecision {
  if (answer.action !== 'accept' || !isRecord(answer.content)) return 'deny'
  const chosen = answer.content.decision
  if (chosen === CHOICES.once) return 'once'
  if (chosen === CHOICES.session && sessionChoice) return 'session'
  return 'deny'
}
