import type { Principal } from '../auth/principal.ts'
import type { CatalogStore } from '../catalog/catalog-store.ts'
import type { AccessView } from '../catalog/catalog-view.ts'
import { EndpointSelection } from '../catalog/endpoint-selection.ts'
import type { EndpointConfig } from '../config/endpoints-schema.ts'

/** Why a request may not use an endpoint: it does not exist (404), or the principal lacks its roles (403). */
export type Admission = { ok: true } | { ok: false, status: 403 | 404, message: string }

/** What a session on one path is served: its view, and the endpoint behind it (none: the full catalog). */
export interface Served { view: AccessView, selection: EndpointSelection | undefined }

/**
 * The configured endpoints by name. A route is the path segment after /mcp (undefined for /mcp
 * itself, which serves the default endpoint if one is marked, else the full catalog). A reload
 * replaces the selections; sessions re-read theirs.
 */
export class Endpoints {
  private byName = new Map<string, EndpointSelection>()
  private root: EndpointSelection | undefined
  private readonly catalogs: CatalogStore

  constructor (configs: readonly EndpointConfig[], catalogs: CatalogStore) {
    this.catalogs = catalogs
    this.reconfigure(configs)
  }

  reconfigure (configs: readonly EndpointConfig[]): void {
    this.byName = new Map(configs.map(c => [c.name, new EndpointSelection(c, this.catalogs)]))
    this.root = [...this.byName.values()].find(s => s.config.default)
  }

  get names (): string[] { return [...this.byName.keys()] }

  /** The endpoint a route serves: undefined when there is no such endpoint, null for the full catalog. */
  selection (route: string | undefined): EndpointSelection | undefined | null {
    if (route === undefined) return this.root ?? null
    return this.byName.get(route)
  }

  /** Whether `principal` may use the endpoint at `route` now. */
  admit (route: string | undefined, principal: Principal): Admission {
    const selection = this.selection(route)
    if (selection === undefined) return { ok: false, status: 404, message: `Not Found: no endpoint named "${route ?? ''}"` }
    const roles = selection?.config.roles
    if (selection === null || roles === undefined || roles.some(r => principal.roles.includes(r))) return { ok: true }
    const has = principal.roles.length === 0 ? 'has no roles' : `has roles ${principal.roles.join(', ')}`
    return { ok: false, status: 403, message: `Forbidden: endpoint "${selection.name}" is open only to principals with role ${roles.join(' or ')}; ${principal.id} ${has}` }
  }

  /** The view a session on `route` gets from the policy's view of its principal; undefined when the endpoint is gone. */
  serve (route: string | undefined, policy: AccessView): Served | undefined {
    const selection = this.selection(route)
    if (selection === undefined) return undefined
    if (selection === null) return { view: policy, selection: undefined }
    return { view: selection.view(policy), selection }
  }
}
