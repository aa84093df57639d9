import type { RpcPeer } from './rpc-peer.ts'

/**
 * Probes a connected upstream every `every` ms; a probe that fails is told to `onFailure` with why
 * (the connection decides: reconnect, or close quietly when its caller's credential is gone).
 * 2026-07-28 has no ping: server/discover is as cheap.
 */
export function healthCheck<C> (peer: RpcPeer<C>, every: number | undefined, connectTimeoutMs: number, era: 'legacy' | 'modern', onFailure: (err: unknown) => void): NodeJS.Timeout | undefined {
  if (every === undefined || every <= 0) return undefined
  const probe = era === 'modern' ? 'server/discover' : 'ping'
  const timer = setInterval(() => {
    peer.request(probe, undefined, { timeoutMs: Math.min(every, connectTimeoutMs) }).catch((err: unknown) => {
      if (peer.isClosed) return
      onFailure(err)
    })
  }, every)
  timer.unref()
  return timer
}
