// An upstream that acts for each user (auth oauth or token_exchange) gets a connection per
// principal unless its isolation is given: one connection shared by several users would carry
// whoever connected first.

const PER_USER = new Set(['oauth', 'token_exchange'])

/** Fills `isolation: principal` into per-user upstreams that name none. Runs on the raw document, before validation. */
export function perUserIsolation (doc: unknown): unknown {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return doc
  const raw = doc as Record<string, unknown>
  if (!Array.isArray(raw.upstreams)) return doc
  const upstreams = raw.upstreams.map((u: unknown) => {
    if (typeof u !== 'object' || u === null) return u
    const upstream = u as Record<string, unknown>
    const auth = upstream.auth as { type?: unknown } | undefined
    if (upstream.isolation !== undefined || typeof auth?.type !== 'string' || !PER_USER.has(auth.type)) return u
    return { ...upstream, isolation: 'principal' }
  })
  return { ...raw, upstreams }
}
