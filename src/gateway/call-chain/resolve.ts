import type { CatalogEntry } from '../../catalog/catalog.ts'
import { RPC, RpcError } from '../../protocol/json-rpc.ts'
import { SwitchboardError } from '../../errors.ts'
import { toToolResult } from '../../protocol/error-forms.ts'
import type { FirstListing } from '../first-listing.ts'
import type { CallStep, CallToolResult } from './tool-call.ts'

/** The tool catalog as the call path reads it (the store's current one: it is replaced on every change). */
export interface ToolCatalogs {
  readonly tools: {
    resolve: (exposed: string) => CatalogEntry | undefined
    quarantined: (exposed: string) => CatalogEntry | undefined
  }
}

function quarantined (name: string, held: CatalogEntry): CallToolResult {
  const details = held.heldBy === 'scan' ? { tool: held.original, heldBy: 'scan' } : { tool: held.original }
  return toToolResult(new SwitchboardError('SB_ERR_TOOL_QUARANTINED', undefined, { details }), { upstream: held.upstream, tool: name })
}

/**
 * The exposed name → its catalog entry and upstream. A name nobody serves is unknown; a tool held
 * by tool pinning that the principal may see is refused with the reason (quarantined). A name of an
 * upstream that lists through its users and has no catalog yet (`firstListing`) opens the caller's
 * connection to it first, then is resolved once more.
 */
export function resolveStep (catalogs: ToolCatalogs, firstListing?: FirstListing): CallStep {
  const step: CallStep = (call, next) => {
    const name = call.tool
    const entry = catalogs.tools.resolve(name)
    if (entry !== undefined) {
      call.entry = entry
      call.upstream = entry.upstream
      return next(call)
    }
    const held = call.ctx.session.view.allows('tools', name) ? catalogs.tools.quarantined(name) : undefined
    if (held !== undefined) {
      call.upstream = held.upstream
      call.outcome = 'quarantined'
      return Promise.resolve(quarantined(name, held))
    }
    const unlisted = firstListing?.upstreamOf(name)
    if (unlisted !== undefined && firstListing !== undefined) {
      call.upstream = unlisted
      return firstListing.list(unlisted, call.ctx).then(() => again(call, next))
    }
    call.outcome = 'unknown_tool'
    return Promise.reject(new RpcError(RPC.INVALID_PARAMS, `Unknown tool: ${name}`))
  }
  const again = firstListing === undefined ? step : resolveStep(catalogs)
  return step
}
