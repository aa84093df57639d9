import type { Principal } from '../auth/principal.ts'
import type { CatalogStore } from '../catalog/catalog-store.ts'
import type { GatewayConfig } from '../config/schema.ts'
import type { Endpoints } from '../gateway/endpoints.ts'
import type { CallFeed } from '../observability/call-feed.ts'
import type { CallStats } from '../observability/call-stats.ts'
import type { AccessPolicy } from '../policy/access-policy.ts'
import type { Dispatcher } from '../session/dispatcher.ts'
import type { SessionManager } from '../session/session-manager.ts'
import type { ToolPins } from '../trust/tool-pins.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import type { AdminService } from './admin-service.ts'
import { catalogView } from './catalog-view.ts'
import { ConsoleRefusal, consoleCall } from './console-call.ts'
import { isKnownPrincipal, principalFor, principalsOf, type PrincipalEvidence } from './console-principals.ts'
import { sessionIdOf, sessionList } from './session-list.ts'

/** What the console's members of AdminService read and act on: the gateway's own services. */
export interface ConsoleServiceDeps {
  config: () => GatewayConfig
  sessions: Pick<SessionManager, 'all' | 'delete' | 'ephemeral' | 'release'>
  catalogs: CatalogStore
  endpoints: Endpoints
  policy: () => AccessPolicy
  pins?: Pick<ToolPins, 'listing'> | undefined
  dispatcher: Pick<Dispatcher, 'handleRequest'>
  pool: Pick<UpstreamPool, 'releaseSession'>
  calls: CallFeed
  stats: Pick<CallStats, 'snapshot'>
}

export type ConsoleMembers = Required<Pick<AdminService, 'sessionList' | 'endSession' | 'catalog' | 'principals' | 'callTool' | 'callStats' | 'calls'>>

/** The sessions one by one, the catalog as a client sees it, the principals, calls as one of them, and the call statistics. */
export function consoleMembers (deps: ConsoleServiceDeps, grants?: PrincipalEvidence['grants']): ConsoleMembers {
  const principal = (id: string, roles?: readonly string[]): ReturnType<typeof principalFor> => principalFor(deps.config().auth, id, roles)
  const known = async (who: Principal): Promise<boolean> => await isKnownPrincipal(who, { sessions: () => deps.sessions.all(), grants })
  const actAsUnknown = (): boolean => deps.config().admin?.console.actAsUnknown ?? false
  const { pins } = deps
  const pinData = pins === undefined ? undefined : async () => await pins.listing()
  return {
    sessionList: (limit) => sessionList(deps.sessions.all(), limit),
    endSession: (ref) => {
      const id = sessionIdOf(deps.sessions.all(), ref)
      // What the client's own DELETE does: ended everywhere, its connections and subscriptions released.
      return id !== undefined && deps.sessions.delete(id, 'ended by the operator')
    },
    catalog: async ({ endpoint, principal: id, query }) => {
      const who = id === null ? null : principal(id)
      if (who === undefined) throw new ConsoleRefusal(400, 'unknown_principal', `no principal "${id ?? ''}" in the config's auth section`)
      const view = await catalogView({ catalogs: deps.catalogs, endpoints: deps.endpoints, policy: deps.policy, pins: pinData }, endpoint, who, query)
      if (view === undefined) throw new ConsoleRefusal(404, 'not_found', `no endpoint named "${endpoint ?? ''}"`)
      return view
    },
    principals: () => principalsOf(deps.config().auth),
    callTool: async (call, signal) => await consoleCall({ principal, known, actAsUnknown, sessions: deps.sessions, dispatcher: deps.dispatcher, pool: deps.pool, endpoints: deps.endpoints }, call, signal),
    callStats: () => deps.stats.snapshot(),
    calls: deps.calls
  }
}
