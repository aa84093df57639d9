import type { CatalogEntry } from '../catalog/catalog.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import type { CallContext } from '../session/call-context.ts'
import type { CallFacts } from './call-conditions.ts'

const NONE: Readonly<Record<string, unknown>> = Object.freeze({})

/** The facts a policy's call-time conditions see of one tools/call. */
export function callFactsOf (ctx: CallContext, entry: CatalogEntry, params: Record<string, unknown>): CallFacts {
  const annotations = entry.definition.annotations
  return {
    principal: ctx.principal,
    // The edge verified the token and kept its claims with it (IncomingToken); only a JWT
    // principal's token is handed on, so an API key's caller has none.
    claims: ctx.principal.via === 'jwt' ? ctx.token?.claims ?? NONE : NONE,
    tool: { name: entry.exposed, upstream: entry.upstream, annotations: isRecord(annotations) ? annotations : NONE },
    args: isRecord(params.arguments) ? params.arguments : NONE
  }
}
