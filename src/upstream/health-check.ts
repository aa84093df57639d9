import type { Logger } from 'pino'
import { describeError } from './describe-error.ts'
import type { RpcPeer } from './rpc-peer.ts'

/**
 * Probes a connected upstream every `every` ms; one that does not answer is closed, which makes
 * its connection reconnect. 2026-07-28 has no ping: server/discover is as cheap.
 */
export function healthCheck<C> (peer: RpcPeer<C>, every: number | undefined, connectTimeoutMs: number, era: 'legacy' | 'modern', log: Logger): NodeJS.Timeout | undefined {
  if (every === undefined || every <= 0) return undefined
  const probe = era === 'modern' ? 'server/discover' : 'ping'
  const timer = setInterval(() => {
    peer.request(probe, undefined, { timeoutMs: Math.min(every, connectTimeoutMs) }).catch((err: unknown) => {
      if (peer.isClosed) return
      log.warn({ err: describeError(err) }, 'upstream failed its health check; reconnecting')
      void peer.close()
    })
  }, every)
  timer.unref()
  return timer
}
