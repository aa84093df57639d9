import type { Logger } from 'pino'
import { CallSignal } from '../protocol/cancel-signal.ts'
import { RpcError } from '../protocol/json-rpc.ts'
import { describeError as describe } from './describe-error.ts'
import { listenFilter } from './modern-upstream.ts'
import type { RpcPeer } from './rpc-peer.ts'

const LISTEN_AGAIN_MS = 1_000

export interface ListenStreamOptions<C> {
  log: Logger
  /** Whether list changes are listened for (a connection that lists). */
  listing: boolean
  /** The peer in use while the connection is ready; a stream on another is no longer wanted. */
  current: () => RpcPeer<C> | undefined
  closed: () => boolean
}

/**
 * 2026-07-28: list changes and resource updates come on a subscriptions/listen stream instead of
 * the GET stream. It is opened again a moment after it ends, for as long as its peer is the one in
 * use; resources/subscribe and unsubscribe change the URIs it asks for, and open it again.
 */
export class ListenStream<C> {
  readonly #options: ListenStreamOptions<C>
  /** The resource URIs clients subscribed to. */
  readonly #watched = new Set<string>()
  #signal: CallSignal | undefined
  #capabilities: Record<string, unknown> = {}

  constructor (options: ListenStreamOptions<C>) {
    this.#options = options
  }

  open (peer: RpcPeer<C>, capabilities: Record<string, unknown>): void {
    this.stop()
    this.#capabilities = capabilities
    const lists = this.#options.listing ? listenFilter(capabilities) : undefined
    const notifications: Record<string, unknown> = this.#watched.size === 0 ? { ...lists } : { ...lists, resourceSubscriptions: [...this.#watched] }
    if (Object.keys(notifications).length === 0) return
    const signal = new CallSignal()
    this.#signal = signal
    const again = (): void => {
      if (signal !== this.#signal || peer !== this.#options.current() || peer.isClosed || this.#options.closed()) return
      setTimeout(() => { if (signal === this.#signal) this.open(peer, capabilities) }, LISTEN_AGAIN_MS).unref()
    }
    peer.request('subscriptions/listen', { notifications }, { signal }).then(again, (err: unknown) => {
      if (signal === this.#signal && peer === this.#options.current() && !peer.isClosed) this.#options.log.warn({ err: describe(err) }, 'upstream subscriptions/listen ended; opening it again')
      again()
    })
  }

  stop (): void {
    this.#signal?.abort(undefined)
    this.#signal = undefined
  }

  /** resources/subscribe or unsubscribe, which 2026-07-28 replaced by the URIs a listen asks for. */
  watch (method: string, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const uri = params?.uri
    if (typeof uri !== 'string') return Promise.reject(new RpcError(-32602, `${method} needs a string uri`))
    const before = this.#watched.size
    if (method === 'resources/subscribe') this.#watched.add(uri)
    else this.#watched.delete(uri)
    const peer = this.#options.current()
    if (this.#watched.size !== before && peer !== undefined) this.open(peer, this.#capabilities)
    return Promise.resolve({})
  }
}
