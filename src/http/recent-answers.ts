/**
 * The last event (its answer) of each POST stream that ended here lately, kept in memory for a
 * while: a client that resumes the stream after its call finished gets the answer even when the
 * event store lost it (Redis restarted empty, or down when the answer was appended). Bounded in
 * count and age; keyed by session and stream, so a stream id is worth nothing in another session.
 */
export class RecentAnswers {
  private readonly kept = new Map<string, { id: string, message: unknown, at: number }>()
  private readonly max: number
  private readonly ttlMs: number

  constructor (max = 2_000, ttlMs = 120_000) {
    this.max = max
    this.ttlMs = ttlMs
  }

  remember (sessionId: string, streamId: string, id: string, message: unknown): void {
    const key = `${sessionId} ${streamId}`
    this.kept.delete(key)
    this.kept.set(key, { id, message, at: Date.now() })
    if (this.kept.size > this.max) this.kept.delete(this.kept.keys().next().value as string)
  }

  get (sessionId: string, streamId: string): { id: string, message: unknown } | undefined {
    const key = `${sessionId} ${streamId}`
    const entry = this.kept.get(key)
    if (entry === undefined) return undefined
    if (Date.now() - entry.at > this.ttlMs) {
      this.kept.delete(key)
      return undefined
    }
    return { id: entry.id, message: entry.message }
  }
}
