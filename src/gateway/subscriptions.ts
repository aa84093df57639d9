/** Which downstream sessions subscribed to which resource URI of which upstream. */
export class Subscriptions {
  private readonly byUpstream = new Map<string, Map<string, Set<string>>>()
  private readonly ownConnections: (upstream: string) => boolean

  /** `ownConnections`: whether an upstream gives each session its own connection (isolation: session). */
  constructor (ownConnections: (upstream: string) => boolean = () => false) {
    this.ownConnections = ownConnections
  }

  /**
   * Returns true when this is the URI's first subscriber on the connection that serves the session:
   * on a shared connection the first of all its sessions, on a session's own connection always (it
   * must be subscribed there, or be refused: a session over its upstream's maxSessionConnections
   * gets the error, not a subscription that nothing serves).
   */
  add (upstream: string, uri: string, sessionId: string): boolean {
    let uris = this.byUpstream.get(upstream)
    if (uris === undefined) {
      uris = new Map()
      this.byUpstream.set(upstream, uris)
    }
    let sessions = uris.get(uri)
    const first = sessions === undefined || sessions.size === 0
    if (sessions === undefined) {
      sessions = new Set()
      uris.set(uri, sessions)
    }
    sessions.add(sessionId)
    return first || this.ownConnections(upstream)
  }

  /** Returns true when the session was the URI's last subscriber on that upstream. */
  remove (upstream: string, uri: string, sessionId: string): boolean {
    const uris = this.byUpstream.get(upstream)
    const sessions = uris?.get(uri)
    if (uris === undefined || sessions === undefined || !sessions.delete(sessionId)) return false
    if (sessions.size > 0) return false
    uris.delete(uri)
    if (uris.size === 0) this.byUpstream.delete(upstream)
    return true
  }

  /** The upstream on which this session subscribed to the URI. */
  upstreamOf (uri: string, sessionId: string): string | undefined {
    for (const [upstream, uris] of this.byUpstream) if (uris.get(uri)?.has(sessionId) === true) return upstream
    return undefined
  }

  subscribers (upstream: string, uri: string): ReadonlySet<string> {
    return this.byUpstream.get(upstream)?.get(uri) ?? new Set()
  }

  /** URIs of an upstream with at least one subscriber (optionally: that this session subscribed to). */
  uris (upstream: string, sessionId?: string): string[] {
    const uris = this.byUpstream.get(upstream)
    if (uris === undefined) return []
    return [...uris].filter(([, sessions]) => sessionId === undefined || sessions.has(sessionId)).map(([uri]) => uri)
  }

  /** Forgets a session; returns the (upstream, uri) pairs nobody is subscribed to any more. */
  removeSession (sessionId: string): Array<{ upstream: string, uri: string }> {
    const emptied: Array<{ upstream: string, uri: string }> = []
    for (const [upstream, uris] of [...this.byUpstream]) {
      for (const uri of [...uris.keys()]) {
        if (this.remove(upstream, uri, sessionId)) emptied.push({ upstream, uri })
      }
    }
    return emptied
  }
}
