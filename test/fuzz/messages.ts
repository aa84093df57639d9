// Valid JSON-RPC messages for every method the gateway serves, the seeds the fuzz tests mutate.
// Tool names are those of the controllable fixture behind the prefix `up`; only tools that answer at
// once are called (slow, stall, crash and the ones that ask the client would only test a timeout).
import fc from 'fast-check'
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, encodeHeaderValue, mcpNameHeader } from '../../src/protocol/modern.ts'
import { type Json, type Mutation, type TextMutation, mutation, textMutation } from './mutations.ts'

const short = fc.string({ maxLength: 24 })
const id: fc.Arbitrary<string | number> = fc.oneof(fc.nat(), fc.integer(), fc.string({ maxLength: 16 }), fc.constantFrom(0, -1, 1.5, 2 ** 53 - 1))
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']
const URIS = ['fixture://up/hello', 'fixture://up/blob', 'fixture://up/items/1', 'fixture://up/items/zz', 'fixture://nowhere/x']

type Params = Record<string, unknown> | undefined

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

/** What a client may put in a request's _meta: a progress token, a W3C trace context (valid or not). */
const meta: fc.Arbitrary<Record<string, unknown> | undefined> = fc.option(fc.record({
  progressToken: fc.oneof(fc.nat(), short),
  traceparent: fc.oneof(fc.constant(TRACEPARENT), short, fc.constantFrom('bad\nvalue', '€', `${TRACEPARENT}\r`)),
  tracestate: fc.oneof(fc.constant('a=1'), short, fc.constantFrom('a=1\nb=2', 'é=1'))
}, { requiredKeys: [] }), { nil: undefined })

/** A request with a client's _meta (progress token, trace context) added to its params, sometimes. */
function request (method: string, params: Params, requestId: string | number, extra: Record<string, unknown> | undefined): Json {
  const withMeta = extra === undefined ? params : { ...params, _meta: { ...(params?._meta as Record<string, unknown> | undefined), ...extra } }
  return (withMeta === undefined ? { jsonrpc: '2.0', id: requestId, method } : { jsonrpc: '2.0', id: requestId, method, params: withMeta }) as Json
}

const toolCall: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({ name: fc.constant('up__echo'), arguments: fc.record({ text: short }) }),
  fc.record({ name: fc.constant('up__add'), arguments: fc.record({ a: fc.double(), b: fc.integer() }) }),
  fc.record({ name: fc.constantFrom('up__rich', 'up__fail', 'up__whoami', 'up__counter', 'up__stats', 'up__nope', 'search_tools'), arguments: fc.constant({}) }),
  // The 2026-07-28 upstream's tool whose argument goes in a header (Mcp-Param-Region) too.
  fc.record({ name: fc.constant('modern__where'), arguments: fc.record({ region: fc.oneof(short, fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom(' x ', '=?base64?eA==?=', 'a\r\nb', 'x'.repeat(20_000))) }, { requiredKeys: [] }) })
)

/** [method, params] of the requests a client may send in a 2025-11-25 session. */
const sessionRequest: fc.Arbitrary<[string, Params]> = fc.oneof(
  fc.tuple(fc.constant('ping'), fc.constantFrom(undefined, {})),
  fc.tuple(fc.constantFrom('tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'tasks/list'), fc.option(fc.record({ cursor: short }), { nil: undefined })),
  fc.tuple(fc.constant('tools/call'), toolCall),
  fc.tuple(fc.constant('prompts/get'), fc.oneof(fc.record({ name: fc.constant('up__greeting'), arguments: fc.record({ name: short }) }), fc.constant({ name: 'up__plain' }))),
  fc.tuple(fc.constantFrom('resources/read', 'resources/subscribe', 'resources/unsubscribe'), fc.record({ uri: fc.constantFrom(...URIS) })),
  fc.tuple(fc.constant('completion/complete'), fc.record({
    ref: fc.constantFrom({ type: 'ref/prompt', name: 'up__greeting' }, { type: 'ref/resource', uri: 'fixture://up/items/{id}' }),
    argument: fc.record({ name: fc.constantFrom('name', 'id'), value: short })
  })),
  fc.tuple(fc.constant('logging/setLevel'), fc.record({ level: fc.constantFrom(...LEVELS) })),
  fc.tuple(fc.constantFrom('tasks/get', 'tasks/result', 'tasks/cancel'), fc.record({ taskId: short })),
  fc.tuple(fc.constant('initialize'), fc.constant({ protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } })),
  fc.tuple(fc.oneof(short, fc.constantFrom('sampling/createMessage', 'roots/list', 'elicitation/create', 'server/discover', 'rpc.discover')), fc.constant({}))
)

const notification: fc.Arbitrary<[string, Params]> = fc.oneof(
  fc.tuple(fc.constant('notifications/initialized'), fc.constant(undefined)),
  fc.tuple(fc.constant('notifications/cancelled'), fc.record({ requestId: id, reason: short })),
  fc.tuple(fc.constant('notifications/progress'), fc.record({ progressToken: id, progress: fc.double() })),
  fc.tuple(fc.constant('notifications/roots/list_changed'), fc.constant(undefined)),
  fc.tuple(short, fc.constant({}))
)

const response: fc.Arbitrary<Json> = fc.oneof(
  fc.record({ jsonrpc: fc.constant('2.0'), id, result: fc.constantFrom<Json>({}, { roots: [] }, { action: 'decline' }) }),
  fc.record({ jsonrpc: fc.constant('2.0'), id, error: fc.record({ code: fc.integer(), message: short }) })
)

function notify ([method, params]: [string, Params]): Json {
  return (params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params }) as Json
}

/** The same message aimed at any of the upstreams (`up` stdio, `web` Streamable HTTP, `sse`, `ws`, `modern`), not only `up`. */
function eitherUpstream (message: fc.Arbitrary<Json>): fc.Arbitrary<Json> {
  return fc.tuple(message, fc.constantFrom('up', 'up', 'web', 'sse', 'ws', 'modern')).map(([m, prefix]) => prefix === 'up'
    ? m
    : JSON.parse(JSON.stringify(m).replaceAll('up__', `${prefix}__`).replaceAll('fixture://up/', `fixture://${prefix}/`)) as Json)
}

/** Any valid message of a 2025-11-25 session: mostly requests, some notifications and responses. */
export const sessionMessage: fc.Arbitrary<Json> = eitherUpstream(fc.oneof(
  { weight: 6, arbitrary: fc.tuple(sessionRequest, id, meta).map(([[method, params], requestId, m]) => request(method, params, requestId, m)) },
  { weight: 2, arbitrary: notification.map(notify) },
  { weight: 1, arbitrary: response }
))

export interface Fuzzed { message: Json, mutations: Mutation[], text: TextMutation[] }

/** A valid message, then (most of the time) a few mutations of its value and, less often, of its text. */
export function fuzzed (valid: fc.Arbitrary<Json>): fc.Arbitrary<Fuzzed> {
  return fc.record({
    message: valid,
    mutations: fc.oneof({ weight: 1, arbitrary: fc.constant<never[]>([]) }, { weight: 3, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) }),
    text: fc.oneof({ weight: 6, arbitrary: fc.constant<never[]>([]) }, { weight: 1, arbitrary: fc.array(textMutation, { minLength: 1, maxLength: 2 }) })
  })
}

// 2026-07-28: no session; the version and capabilities in _meta, the method and name in headers.

const modernRequest: fc.Arbitrary<[string, Params]> = fc.oneof(
  fc.tuple(fc.constant('server/discover'), fc.constant({})),
  fc.tuple(fc.constantFrom('tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'), fc.option(fc.record({ cursor: short }), { nil: undefined })),
  fc.tuple(fc.constant('tools/call'), toolCall),
  fc.tuple(fc.constant('prompts/get'), fc.record({ name: fc.constant('up__greeting'), arguments: fc.record({ name: short }) })),
  fc.tuple(fc.constant('resources/read'), fc.record({ uri: fc.constantFrom(...URIS) })),
  fc.tuple(fc.constant('completion/complete'), fc.constant({ ref: { type: 'ref/prompt', name: 'up__greeting' }, argument: { name: 'name', value: 'a' } })),
  fc.tuple(fc.constant('subscriptions/listen'), fc.option(fc.record({ notifications: fc.record({ toolsListChanged: fc.boolean() }) }), { nil: undefined })),
  fc.tuple(fc.constantFrom('tasks/get', 'tasks/update', 'tasks/cancel'), fc.record({ taskId: short })),
  fc.tuple(fc.constantFrom('ping', 'initialize', 'logging/setLevel', 'resources/subscribe'), fc.constant({})),
  fc.tuple(short, fc.constant({}))
)

const HEADER_NAMES = ['mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id', 'mcp-param-x', 'accept', 'content-type']
const MEDIA_TYPES = ['application/json', '*/*', 'application/json; charset=utf-16', 'APPLICATION/JSON', 'application/json-seq', 'text/plain', 'text/event-stream', 'application/json, text/event-stream']
const headerText = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,30}[\x21-\x7e])?$/)

export type HeaderMutation = { kind: 'drop', name: string } | { kind: 'set', name: string, value: string }

const headerMutation: fc.Arbitrary<HeaderMutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), name: fc.constantFrom(...HEADER_NAMES) }),
  fc.record({ kind: fc.constant('set' as const), name: fc.constantFrom(...HEADER_NAMES), value: fc.oneof(headerText, fc.constantFrom('2026-07-28', '2025-11-25', '2099-01-01', '=?base64?dXBfX2VjaG8=?=', '=?base64?@@?=', ...MEDIA_TYPES)) })
)

export interface FuzzedModern extends Fuzzed { headers: HeaderMutation[] }

/** A 2026-07-28 request or notification, its headers as the revision wants them, and mutations of both. */
export const modernFuzzed: fc.Arbitrary<FuzzedModern> = fc.record({
  message: eitherUpstream(fc.oneof(
    { weight: 6, arbitrary: fc.tuple(modernRequest, id, meta).map(([[method, params], requestId, m]) => request(method, params, requestId, m)) },
    { weight: 1, arbitrary: notification.map(notify) }
  )).map(withClaim),
  mutations: fc.oneof({ weight: 1, arbitrary: fc.constant<never[]>([]) }, { weight: 2, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) }),
  text: fc.oneof({ weight: 8, arbitrary: fc.constant<never[]>([]) }, { weight: 1, arbitrary: fc.array(textMutation, { minLength: 1, maxLength: 2 }) }),
  headers: fc.oneof({ weight: 2, arbitrary: fc.constant<never[]>([]) }, { weight: 1, arbitrary: fc.array(headerMutation, { minLength: 1, maxLength: 2 }) })
})

function withClaim (message: Json): Json {
  const m = message as Record<string, Json>
  const params = (m.params ?? {}) as Record<string, Json>
  const meta = { ...((params._meta ?? {}) as Record<string, Json>), [META_PROTOCOL_VERSION]: '2026-07-28', [META_CLIENT_CAPABILITIES]: {} }
  return { ...m, params: { ...params, _meta: meta } }
}

/** Every header a 2026-07-28 client sends with `message` (content type and accept too), then the mutations. */
export function modernHeaders (message: Json, mutations: readonly HeaderMutation[]): Record<string, string> {
  const m = message as Record<string, Json>
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' }
  if (typeof m.method === 'string') {
    headers['mcp-method'] = m.method
    const name = mcpNameHeader(m.method, m.params as Record<string, unknown> | undefined)
    if (name !== undefined) headers['mcp-name'] = name
  }
  for (const h of mutations) {
    if (h.kind === 'drop') delete headers[h.name]
    else headers[h.name] = h.name === 'mcp-name' ? encodeHeaderValue(h.value) : h.value
  }
  return headers
}

// Concurrent messages on one session whose ids collide on purpose: duplicates in flight, cancellations
// that hit (or just miss) a running call, progress tokens shared between calls.
const pooledId = fc.constantFrom<string | number>(1, 2, 3, 'a')

const concurrentMessage: fc.Arbitrary<Json> = fc.oneof(
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: pooledId,
    method: fc.constant('tools/call'),
    params: fc.record({
      name: fc.constantFrom('up__slow', 'up__slow_read'),
      arguments: fc.record({ ms: fc.integer({ min: 0, max: 150 }), steps: fc.integer({ min: 1, max: 4 }) }),
      _meta: fc.option(fc.record({ progressToken: pooledId }), { nil: undefined })
    }, { requiredKeys: ['name', 'arguments'] })
  }),
  fc.record({ jsonrpc: fc.constant('2.0'), method: fc.constant('notifications/cancelled'), params: fc.record({ requestId: pooledId, reason: fc.constant('fuzz') }) }),
  fc.tuple(pooledId, fc.constantFrom('ping', 'tools/list', 'prompts/list')).map(([id, method]) => ({ jsonrpc: '2.0', id, method })),
  fc.record({ jsonrpc: fc.constant('2.0'), id: pooledId, method: fc.constant('tools/call'), params: fc.record({ name: fc.constant('up__echo'), arguments: fc.record({ text: short }) }) }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: pooledId, result: fc.constant({}) })
) as fc.Arbitrary<Json>

/** A few messages for one session, each sent after its own short delay, all in flight together. */
export const concurrentBatch: fc.Arbitrary<Array<{ message: Json, delayMs: number }>> =
  fc.array(fc.record({ message: concurrentMessage, delayMs: fc.integer({ min: 0, max: 60 }) }), { minLength: 2, maxLength: 6 })
