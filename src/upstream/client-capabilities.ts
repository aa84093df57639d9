// What the gateway declares to an upstream as its client, by whom the connection serves.

/**
 * A shared connection may serve many clients at once, so it declares what the gateway can route
 * to the client of the call in progress (sampling, elicitation) but never roots: one client's
 * roots must not become everyone's.
 */
export const SHARED_CLIENT_CAPABILITIES = Object.freeze({ sampling: {}, elicitation: { form: {}, url: {} } })

/**
 * The listing connection of a session-isolated upstream declares everything a session's own
 * connection may declare, so that a server which offers some tools only to clients with roots,
 * sampling or elicitation lists them too.
 */
export const LISTING_CLIENT_CAPABILITIES = Object.freeze({ ...SHARED_CLIENT_CAPABILITIES, roots: { listChanged: true } })

/** A session's own connection declares exactly what its client declared. */
export function mirroredCapabilities (client: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of ['sampling', 'elicitation', 'roots']) if (client[key] !== undefined) out[key] = client[key]
  return out
}
