/**
 * How a request's cancellation looks to whoever waits on it: the part of AbortSignal the gateway
 * uses, so that an AbortSignal is one too.
 */
export interface CancelSignal {
  readonly aborted: boolean
  readonly reason: unknown
  addEventListener: (type: 'abort', listener: () => void, options?: { once?: boolean }) => void
  removeEventListener: (type: 'abort', listener: () => void) => void
}

/**
 * The cancellation of one downstream request. Every request gets one and almost none is ever
 * cancelled, so it is a plain object with a listener list rather than an AbortController (an
 * EventTarget with its maps, and a listener record per waiter). Listeners run once, in the order
 * they were added; one added after the abort is not called, as with AbortSignal.
 */
export class CallSignal implements CancelSignal {
  aborted = false
  reason: unknown = undefined
  private listeners: Array<() => void> | undefined

  addEventListener (_type: 'abort', listener: () => void): void {
    if (this.aborted) return
    if (this.listeners === undefined) this.listeners = [listener]
    else this.listeners.push(listener)
  }

  removeEventListener (_type: 'abort', listener: () => void): void {
    const listeners = this.listeners
    if (listeners === undefined) return
    const i = listeners.indexOf(listener)
    if (i !== -1) listeners.splice(i, 1)
  }

  abort (reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const listeners = this.listeners
    this.listeners = undefined
    if (listeners !== undefined) for (const listener of listeners) listener()
  }
}
