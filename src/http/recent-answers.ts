import { keptJson, storedMessage } from '../protocol/wire.ts'

/**
 * The last event (its answer) of each POST stream that ended here lately, kept in memory for a
 * while: a client that resumes the stream after its call finished gets the answer even when the
 * event store lost it (Redis restarted empty, or down when the answer was appended). Bounded in
 * bytes, per answer and in all, and in age; keyed by session and stream, so a stream id is worth
 * nothing in another session. Kept as text: what is replayed is what was sent.
 */
export class RecentAnswers {
  private readonly kept = new Map<string, { id: string, json: string, at: number }>()
  private bytes = 0
  private readonly limits: { maxBytes: number, maxAnswerBytes: number, ttlMs: number }

  constructor (limits: { maxBytes: number, maxAnswerBytes: number, ttlMs: number } = { maxBytes: 16 * 1024 * 1024, maxAnswerBytes: 1024 * 1024, ttlMs: 120_000 }) {
    this.limits = limits
  }

  remember (sessionId: string, streamId: string, id: string, message: unknown): void {
    let json: string | undefined
    try {
      json = keptJson(message) ?? JSON.stringify(message)
    } catch {
      return
    }
    // Characters, not bytes: close enough for a memory bound, and free.
    if (typeof json !== 'string' || json.length > this.limits.maxAnswerBytes) return
    const key = `${sessionId} ${streamId}`
    this.drop(key)
    this.kept.set(key, { id, json, at: Date.now() })
    this.bytes += json.length
    // Oldest first (a key set again moved to the end): expired ones go, then as many as the bound needs.
    const now = Date.now()
    for (const [oldest, entry] of this.kept) {
      if (this.bytes <= this.limits.maxBytes && now - entry.at <= this.limits.ttlMs) break
      this.drop(oldest)
    }
  }

  get (sessionId: string, streamId: string): { id: string, message: unknown } | undefined {
    const key = `${sessionId} ${streamId}`
    const entry = this.kept.get(key)
    if (entry === undefined) return undefined
    if (Date.now() - entry.at > this.limits.ttlMs) {
      this.drop(key)
      return undefined
    }
    return { id: entry.id, message: storedMessage(entry.json) }
  }

  private drop (key: string): void {
    const entry = this.kept.get(key)
    if (entry === undefined) return
    this.kept.delete(key)
    this.bytes -= entry.json.length
  }
}
