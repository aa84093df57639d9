import { useEffect, useState } from '/console/vendor/htm-preact.js'

// One EventSource per signed-in page, shared by every view: the latest `status` and a bounded
// buffer of the latest `call` events, so Live shows calls that finished before it was opened.

export const MAX_CALLS = 500

const state = { status: null, connected: false, calls: [], callSeq: 0, wanted: false }
const statusListeners = new Set()
const callListeners = new Set()
const linkListeners = new Set()
let source = null

function notify (listeners, value) {
  for (const listener of listeners) listener(value)
}

/** After the browser gives a stream up (a 401, or the 429 past the gateway's cap), a new one this much later. */
const RETRY_MS = 5000
let retry = null

/** `onGiveUp`: called when the browser stops retrying by itself (the app then checks the sign-in). */
export function startEvents (onGiveUp = () => {}) {
  state.wanted = true
  if (source !== null) return
  const own = new EventSource('/admin/events')
  source = own
  own.addEventListener('open', () => { state.connected = true; notify(linkListeners, true) })
  own.addEventListener('error', () => {
    state.connected = false
    notify(linkListeners, false)
    if (own.readyState !== EventSource.CLOSED || source !== own) return
    source = null
    onGiveUp()
    retry = setTimeout(() => { retry = null; if (source === null && state.wanted) startEvents(onGiveUp) }, RETRY_MS)
  })
  own.addEventListener('status', (event) => {
    try { state.status = JSON.parse(event.data) } catch { return }
    if (!state.connected) { state.connected = true; notify(linkListeners, true) }
    notify(statusListeners, state.status)
  })
  own.addEventListener('call', (event) => {
    let call
    try { call = JSON.parse(event.data) } catch { return }
    call.seq = ++state.callSeq
    state.calls = [call, ...state.calls].slice(0, MAX_CALLS)
    notify(callListeners, state.calls)
  })
}

export function stopEvents () {
  state.wanted = false
  clearTimeout(retry)
  retry = null
  source?.close()
  source = null
  state.status = null
  state.connected = false
  state.calls = []
  notify(linkListeners, false)
}

function useFeed (listeners, current) {
  const [value, setValue] = useState(current)
  useEffect(() => {
    listeners.add(setValue)
    // An event may have come between the first render and this subscription.
    setValue(current())
    return () => { listeners.delete(setValue) }
  }, [])
  return value
}

/** The latest `status` event, or null before the first. */
export const useStatus = () => useFeed(statusListeners, () => state.status)
/** The latest calls, newest first, at most MAX_CALLS. */
export const useCalls = () => useFeed(callListeners, () => state.calls)
/** Whether the event stream is open. */
export const useLink = () => useFeed(linkListeners, () => state.connected)
