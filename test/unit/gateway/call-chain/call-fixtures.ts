import type { Principal } from '../../../../src/auth/principal.ts'
import type { CatalogEntry } from '../../../../src/catalog/catalog.ts'
import type { AccessView } from '../../../../src/catalog/catalog-view.ts'
import { policiesSchema } from '../../../../src/config/access-schema.ts'
import { ToolCall } from '../../../../src/gateway/call-chain/tool-call.ts'
import { createAccessPolicy } from '../../../../src/policy/access-policy.ts'
import { CallSignal } from '../../../../src/protocol/cancel-signal.ts'
import { type CallSession, RequestContext } from '../../../../src/session/call-context.ts'

export const alice: Principal = { id: 'alice', roles: ['dev'], via: 'api-key' }

/** A real policy view: `denied` tools are refused to everyone, everything else allowed. */
export function viewDenying (...denied: string[]): AccessView {
  const rules = denied.map(name => ({ principals: ['*'], tools: [name], effect: 'deny' }))
  return createAccessPolicy(policiesSchema.parse({ rules })).viewFor(alice)
}

export function sessionOf (view: AccessView, extra: Partial<CallSession> = {}): CallSession {
  return {
    id: 'session-1',
    clientCapabilities: {},
    principal: alice,
    endpoint: undefined,
    view,
    requestClient: async () => { throw new Error('no client in this test') },
    ...extra
  }
}

export function contextOf (view: AccessView = viewDenying(), extra: Partial<CallSession> = {}, signal = new CallSignal()): RequestContext {
  return new RequestContext(sessionOf(view, extra), signal)
}

export function entryOf (exposed: string, upstream = 'web', definition: Record<string, unknown> = {}): CatalogEntry {
  const original = exposed.slice(exposed.indexOf('__') + 2)
  return { exposed, upstream, original, definition: { name: exposed, ...definition }, timeoutMs: 1000 }
}

/** A call already resolved to `entry`, as the resolve step leaves it. */
export function resolvedCall (entry: CatalogEntry, params: Record<string, unknown> = {}, ctx = contextOf()): ToolCall {
  const call = new ToolCall({ name: entry.exposed, arguments: {}, ...params }, entry.exposed, ctx)
  call.entry = entry
  call.upstream = entry.upstream
  return call
}

export const OK = Object.freeze({ content: [{ type: 'text', text: 'done' }] })

/** A `next` that records the calls it saw and answers `answer`. */
export function recordingNext (answer: Record<string, unknown> | Error = OK): { next: (call: ToolCall) => Promise<Record<string, unknown>>, seen: ToolCall[] } {
  const seen: ToolCall[] = []
  return {
    seen,
    next: async (call) => {
      seen.push(call)
      if (answer instanceof Error) throw answer
      return answer
    }
  }
}
