// The run's abort flag, in one place: set once (signal, time limit), read by every wait and every
// measuring loop so that nothing keeps going after the bench has decided to stop.
import { sleep } from './common.ts'

const POLL_MS = 50

let reason: string | undefined

export function isAborted (): boolean {
  return reason !== undefined
}

/** Records why the run stops; false when it was already aborted (the first reason wins). */
export function markAborted (why: string): boolean {
  if (reason !== undefined) return false
  reason = why
  return true
}

/** Polls until check() gives a value; bounded by timeoutMs. */
export async function waitFor<T> (what: string, timeoutMs: number, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs
  const maxPolls = Math.ceil(timeoutMs / POLL_MS) + 1
  for (let i = 0; i < maxPolls; i++) {
    if (reason !== undefined) throw new Error(`aborted while waiting for ${what}: ${reason}`)
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) break
    await sleep(POLL_MS)
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
}
