import { type JsonRpcMessage, isResponse } from '../protocol/json-rpc.ts'
import { type EventStore, type StoredEvent, parseEventId } from '../session/event-store.ts'
import type { RequestStreamOrigin } from '../session/request-stream-id.ts'
import type { RetryRouter } from '../session/retry-router.ts'
import type { Session } from '../session/session.ts'
import { followElsewhere } from './follow-elsewhere.ts'
import type { RecentAnswers } from './recent-answers.ts'
import type { ResumableStream, StreamConnection } from './resumable-stream.ts'
import { SseStream } from './sse-stream.ts'

/** How many times a resume reads the store again to catch up with a stream that goes on while it replays. */
const MAX_REPLAY_ROUNDS = 8

export interface ResumeDeps {
  store: EventStore
  /** Answers kept where their call ended, for a resume after the store lost them. */
  recent: RecentAnswers
  /** Follows a stream on the replica running its call; undefined with one replica. */
  router: RetryRouter | undefined
  replica: string
  /** Makes the connection the session's standalone stream, here. */
  standaloneHere: (session: Session, connection: SseStream) => void
}

/** A GET with Last-Event-ID, once the replay it starts with has been read. */
export type Resume = (session: Session, connection: StreamConnection, streamId: string, after: string, first: StoredEvent[], live: ResumableStream | undefined, origin: RequestStreamOrigin | undefined) => Promise<void>

export function createResume (deps: ResumeDeps): Resume {
  /**
   * Replays the missed events of one stream (only that stream's) and hands the connection to it if
   * it is still going. Whatever the stream sent while the store was being read is replayed too before
   * the connection is attached, with no await in between, so nothing falls into the gap.
   */
  return async function resume (session: Session, connection: StreamConnection, streamId: string, after: string, first: StoredEvent[], live: ResumableStream | undefined, origin: RequestStreamOrigin | undefined): Promise<void> {
    let replay: StoredEvent[] | undefined = first
    let caughtUpTo = after
    let answered = false
    const replayedChanges = new Set<string>()
    for (let round = 0; replay !== undefined && round < MAX_REPLAY_ROUNDS; round++) {
      for (const event of replay) {
        if (event.message === null) continue
        const message = event.message as JsonRpcMessage
        connection.send(message, event.id)
        if (isResponse(message)) answered = true
        else if ('method' in message) replayedChanges.add(message.method)
      }
      caughtUpTo = replay.at(-1)?.id ?? caughtUpTo
      if (live === undefined || caughtUpTo === live.lastEventId) break
      replay = await deps.store.replayAfter(session.id, streamId, caughtUpTo)
    }
    if (live !== undefined && !live.isEnded) {
      live.attach(connection)
      return
    }
    // A request's stream that does not go on here: followed where its call runs, or answered with
    // an error for its request once that call is known lost. Never the standalone stream.
    const kept = origin === undefined || answered ? undefined : deps.recent.get(session.id, streamId)
    if (kept !== undefined && (parseEventId(kept.id)?.seq ?? 0) > (parseEventId(caughtUpTo)?.seq ?? 0)) {
      connection.send(kept.message as JsonRpcMessage, kept.id)
      answered = true
    }
    if (origin !== undefined && !answered) {
      await followElsewhere({ router: deps.router, store: deps.store, replica: deps.replica, sessionId: session.id, principal: session.principal, streamId, origin, connection, after: caughtUpTo })
      return
    }
    // A stream that carried no answer and lives nowhere here was a standalone stream of a replica
    // that is gone (shared sessions): it goes on here, unless the session already has one here.
    if (origin === undefined && live === undefined && !answered && !session.hasStream && connection instanceof SseStream) {
      // A change the replay just carried (stored by another replica for this stream) is not owed again.
      for (const kind of [...session.owed]) if (replayedChanges.has(`notifications/${kind}/list_changed`)) session.owed.delete(kind)
      deps.standaloneHere(session, connection)
      return
    }
    // A stream that had ended delivered its answer in the replay; the connection ends with it.
    connection.close()
  }
}
