import { SwitchboardError } from '../errors.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import { isCredentialFailure } from './credential-failure.ts'

/** What a request needs to know of a connection to wait for its restart. */
export interface Restarting {
  readonly name: string
  /** Why its last attempt failed or its connection was lost. */
  readonly lastError: string | undefined
  /** What its last failed attempt threw. */
  readonly lastFailure?: unknown
  readonly state: 'connecting' | 'ready' | 'backoff' | 'closed' | 'awaiting_user' | 'stopped'
  /** When its next attempt to connect starts (now, when one is under way). */
  readonly nextAttempt: number
  /** Closed or retired: it will not come back. */
  readonly ended: boolean
  /** Calls the listener once, on its next change of state; returns the cancellation. */
  onNextState: (listener: () => void) => () => void
  /** Stopped on purpose (lazy, idle): asks for its start; the request then waits for it. */
  wake?: () => void
}

/**
 * Resolves, with what is left of the request's timeout, once a connection that is (re)starting is
 * ready: a request made during a restart is sent then, instead of failing. Bounded: the request waits for at most ONE attempt to
 * connect (the one under way, or the next one), and never past its own timeout; it fails with
 * SB_ERR_UPSTREAM_UNAVAILABLE when that attempt fails, when the next attempt would start only after
 * its deadline, when the deadline passes, or when the connection is closed or retired meanwhile.
 */
export async function untilRestarted (connection: Restarting, options: { timeoutMs?: number, signal?: CancelSignal }): Promise<number | undefined> {
  const { signal } = options
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs
  const late = 'restarting; not back within this request\'s timeout'
  let attempting = false
  for (;;) {
    const state = connection.state
    if (state === 'ready') {
      if (options.timeoutMs === undefined) return undefined
      const left = deadline - Date.now()
      if (left < 1) throw unavailable(connection, late)
      return left
    }
    if (state === 'closed' || connection.ended) throw unavailable(connection)
    // Never started (it has no credential of its own): nothing to wait for.
    if (state === 'awaiting_user') throw unavailable(connection, 'it connects only as each user, who must connect their account')
    if (state === 'stopped') {
      // Stopped on purpose (lazy, idle, or making room under maxRunning): its start is asked for, and waited for.
      connection.wake?.()
      attempting = false
    } else if (state === 'connecting') attempting = true
    else if (attempting) throw unavailable(connection)
    else if (connection.nextAttempt > deadline) throw unavailable(connection, 'restarting; its next attempt comes after this request\'s timeout')
    if (signal?.aborted === true) throw abortError(signal)
    const changed = await nextState(connection, deadline, signal)
    if (!changed && signal !== undefined && isAborted(signal)) throw abortError(signal)
    if (!changed) throw unavailable(connection, connection.state === 'stopped' ? connection.lastError ?? late : late)
  }
}

function unavailable (connection: Pick<Restarting, 'name' | 'lastError' | 'lastFailure'>, why = connection.lastError): SwitchboardError {
  const failure = connection.lastFailure
  // A credential's failure (the caller's own, on a principal's connection) is told as it is, not as an outage.
  if (failure instanceof SwitchboardError && isCredentialFailure(failure)) return failure
  return new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE', `upstream ${connection.name} is not connected${why === undefined ? '' : ` (${why})`}`)
}

/** True on the connection's next change of state; false when the deadline passes or the signal aborts first. */
function nextState (connection: Restarting, deadline: number, signal: CancelSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined
    const wake = (changed: boolean): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      cancel()
      resolve(changed)
    }
    const onAbort = (): void => { wake(false) }
    const cancel = connection.onNextState(() => { wake(true) })
    if (Number.isFinite(deadline)) timer = setTimeout(onAbort, Math.max(0, deadline - Date.now()))
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

// A function, not `signal.aborted` inline: the compiler holds it false from the check before the wait.
function isAborted (signal: CancelSignal): boolean {
  return signal.aborted
}

function abortError (signal: CancelSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'aborted')
}
