/** Sessions that hold "approve for this session" answers at once, at most (the least recently used is forgotten first). */
export const MAX_APPROVING_SESSIONS = 10_000
/** Tools one session may have approved for itself, at most (the oldest is forgotten first). */
export const MAX_TOOLS_PER_SESSION = 256

/**
 * The "approve for this session" answers: for (session, exposed tool), later calls pass without a
 * question. Bounded in sessions and in tools per session; whatever is forgotten is asked again,
 * which is always safe. A session's answers go when the session ends here.
 */
export class SessionApprovals {
  readonly #sessions = new Map<string, Set<string>>()
  readonly #maxSessions: number
  readonly #maxTools: number

  constructor (maxSessions = MAX_APPROVING_SESSIONS, maxTools = MAX_TOOLS_PER_SESSION) {
    this.#maxSessions = maxSessions
    this.#maxTools = maxTools
  }

  get size (): number { return this.#sessions.size }

  has (session: string, tool: string): boolean {
    const tools = this.#sessions.get(session)
    if (tools === undefined || !tools.has(tool)) return false
    // Used now: the session is the last one to be forgotten.
    this.#sessions.delete(session)
    this.#sessions.set(session, tools)
    return true
  }

  remember (session: string, tool: string): void {
    const tools = this.#sessions.get(session) ?? new Set<string>()
    this.#sessions.delete(session)
    this.#sessions.set(session, tools)
    tools.delete(tool)
    tools.add(tool)
    if (tools.size > this.#maxTools) tools.delete(tools.values().next().value as string)
    if (this.#sessions.size > this.#maxSessions) this.#sessions.delete(this.#sessions.keys().next().value as string)
  }

  forgetSession (session: string): void {
    this.#sessions.delete(session)
  }

  /** Every answer is forgotten (the policy changed: what was approved may now be asked differently). */
  clear (): void {
    this.#sessions.clear()
  }
}
