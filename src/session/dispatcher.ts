import type { Logger } from 'pino'
import type { CatalogStore } from '../catalog/catalog-store.ts'
import { CallCancelledError, type createCallTool } from '../gateway/call-tool.ts'
import type { Metrics } from '../observability/metrics.ts'
import {
  type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse,
  RPC, RpcError, isRecord, rpcError, rpcResult
} from '../protocol/json-rpc.ts'
import { negotiateVersion } from '../protocol/versions.ts'
import type { Session } from './session.ts'
import type { SessionManager } from './session-manager.ts'

export interface DispatcherDeps {
  catalogs: CatalogStore
  sessions: SessionManager
  callTool: ReturnType<typeof createCallTool>
  metrics: Metrics
  pageSize: number
  serverInfo: { name: string, version: string, title?: string }
  log: Logger
}

/** Sends notifications that belong to one request (progress) on that request's own stream. */
export type RelatedSender = (notification: JsonRpcNotification) => void

// Only what the gateway really relays; later features add to this, never advertise ahead of it.
const CAPABILITIES = { tools: { listChanged: true } }

/** The server side of MCP for every downstream transport: one place that answers each method. */
export class Dispatcher {
  private readonly deps: DispatcherDeps

  constructor (deps: DispatcherDeps) {
    this.deps = deps
  }

  initialize (request: JsonRpcRequest, transport: string): { session: Session, response: JsonRpcResponse } {
    const params = request.params ?? {}
    const protocolVersion = negotiateVersion(params.protocolVersion)
    const session = this.deps.sessions.create({
      transport,
      protocolVersion,
      clientInfo: isRecord(params.clientInfo) ? params.clientInfo : undefined,
      clientCapabilities: isRecord(params.capabilities) ? params.capabilities : {}
    })
    return {
      session,
      response: rpcResult(request.id, { protocolVersion, capabilities: CAPABILITIES, serverInfo: this.deps.serverInfo })
    }
  }

  /** Whether answering this request may involve messages before the result (so it wants a stream). */
  wantsStream (request: JsonRpcRequest): boolean {
    return request.method === 'tools/call' && isRecord(request.params?._meta) && request.params._meta.progressToken !== undefined
  }

  /** Answers one request; undefined when the client cancelled it and no answer is owed. */
  async handleRequest (session: Session, request: JsonRpcRequest, related?: RelatedSender): Promise<JsonRpcResponse | undefined> {
    try {
      return rpcResult(request.id, await this.route(session, request, related))
    } catch (err: unknown) {
      if (err instanceof CallCancelledError) return undefined
      if (err instanceof RpcError) return rpcError(request.id, err.code, err.message, err.data)
      session.log.error({ err, method: request.method }, 'request failed')
      return rpcError(request.id, RPC.INTERNAL_ERROR, 'Internal error')
    }
  }

  private async route (session: Session, request: JsonRpcRequest, related?: RelatedSender): Promise<Record<string, unknown>> {
    const params = request.params ?? {}
    switch (request.method) {
      case 'ping':
        return {}
      case 'tools/list': {
        const cursor = params.cursor
        if (cursor !== undefined && typeof cursor !== 'string') throw new RpcError(RPC.INVALID_PARAMS, 'cursor must be a string')
        const catalog = this.deps.catalogs.catalog
        session.seenDigest = catalog.digest
        return { ...catalog.page(cursor, this.deps.pageSize) }
      }
      case 'tools/call':
        return await this.callTool(session, request, related)
      case 'initialize':
        throw new RpcError(RPC.INVALID_REQUEST, 'the session is already initialized')
      default:
        throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    }
  }

  private async callTool (session: Session, request: JsonRpcRequest, related?: RelatedSender): Promise<Record<string, unknown>> {
    const params = request.params ?? {}
    const token = isRecord(params._meta) ? params._meta.progressToken : undefined
    const onProgress = token !== undefined && related !== undefined
      ? (p: Record<string, unknown>) => {
          related({ jsonrpc: '2.0', method: 'notifications/progress', params: { ...p, progressToken: token } })
          this.deps.metrics.notifications.inc({ method: 'notifications/progress' })
        }
      : undefined
    const controller = session.beginRequest(request.id)
    try {
      return await this.deps.callTool(params, { signal: controller.signal, onProgress })
    } finally {
      session.endRequest(request.id, controller)
    }
  }

  handleNotification (session: Session, notification: JsonRpcNotification): void {
    if (notification.method === 'notifications/cancelled') {
      const id = notification.params?.requestId
      if (typeof id === 'string' || typeof id === 'number') {
        const reason = typeof notification.params?.reason === 'string' ? notification.params.reason : 'cancelled by the client'
        session.cancel(id, reason)
      }
    }
    // notifications/initialized and anything else need no action here.
  }
}
