// Plans for the fuzzing upstream (test/fixtures/fuzzing-upstream.ts): what it writes when a request
// for `lie` arrives, generated here so a seed replays it. `__ID__` is the request's id.
import fc from 'fast-check'
import type { LiePlan } from '../fixtures/fuzzing-upstream.ts'
import { type Json, mutation, oddValue, textMutation, mutate, toText } from './mutations.ts'

/** Valid results of tools/call, prompts/get and resources/read. */
const validResult: fc.Arbitrary<Json> = fc.oneof(
  fc.string({ maxLength: 30 }).map(text => ({ content: [{ type: 'text', text }] })),
  fc.constantFrom<Json>(
    { content: [{ type: 'text', text: 'x' }], isError: true },
    { content: [], structuredContent: { n: 1 } },
    { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] },
    { contents: [{ uri: 'fuzz://lie/x', text: 'x' }] }
  )
)

const anyId: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>('__ID__', '__ID_STR__', '__ID_NEXT__', null, 0, -1, 1.5, '', {}, [], true, '@@n:overflow@@'),
  fc.integer(), fc.string({ maxLength: 10 })
)

/** A JSON value as a line, with the id markers written out bare (the fixture fills them in). */
const asLine = (value: Json): string => toText(value).replaceAll('"__ID__"', '__ID__').replaceAll('"__ID_STR__"', '__ID_STR__').replaceAll('"__ID_NEXT__"', '__ID_NEXT__')

/** The true answer to the request, as a line. */
const rightAnswer: fc.Arbitrary<string> = validResult.map(result => asLine({ jsonrpc: '2.0', id: '__ID__', result }))

/** An answer for the request that lies: mutated result or error, wrong id, no result, odd jsonrpc, extra members. */
const wrongAnswer: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(validResult, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([result, ms]) => asLine(mutate({ jsonrpc: '2.0', id: '__ID__', result }, ms))),
  fc.record({ code: fc.oneof(fc.integer(), oddValue), message: fc.oneof(fc.string({ maxLength: 20 }), oddValue), data: oddValue })
    .map(error => asLine({ jsonrpc: '2.0', id: '__ID__', error })),
  fc.tuple(anyId, validResult).map(([id, result]) => asLine({ jsonrpc: '2.0', id, result })),
  fc.constant(asLine({ jsonrpc: '2.0', id: '__ID__' })),
  fc.tuple(fc.constantFrom<Json>('1.0', 2, null, '2.0 '), validResult).map(([jsonrpc, result]) => asLine({ jsonrpc, id: '__ID__', result })),
  fc.tuple(validResult, fc.string({ maxLength: 8 }), oddValue).map(([result, key, value]) => asLine({ jsonrpc: '2.0', id: '__ID__', result, error: { code: 1, message: 'both' }, [key]: value })),
  fc.tuple(validResult, fc.array(textMutation, { minLength: 1, maxLength: 2 })).map(([result, ts]) => toText({ jsonrpc: '2.0', id: 0, result }, ts).replace('"id":0', '"id":__ID__'))
)

const NOTIFICATIONS = ['notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed', 'notifications/resources/updated',
  'notifications/message', 'notifications/progress', 'notifications/cancelled', 'notifications/tasks/status', 'notifications/elicitation/complete', 'notifications/whatever']
const REQUESTS = ['sampling/createMessage', 'roots/list', 'elicitation/create', 'ping', 'tools/call', 'whatever/else']

/** Well-formed requests to the client (a 2026-07-28 client gets them as input_required), under ids that may repeat. */
const askClient: fc.Arbitrary<string> = fc.tuple(fc.oneof(fc.nat({ max: 3 }), fc.constantFrom('q', '__ID__')), fc.constantFrom<Json>(
  { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 } },
  { method: 'elicitation/create', params: { message: 'name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } },
  { method: 'roots/list', params: {} }
)).map(([id, request]) => asLine({ jsonrpc: '2.0', id, ...(request as Record<string, Json>) }))

/** What an upstream may send unasked: notifications, requests to the client, responses to nothing, garbage. */
const unsolicited: fc.Arbitrary<string> = fc.oneof(
  askClient,
  fc.tuple(fc.constantFrom(...NOTIFICATIONS), fc.oneof(fc.constant(undefined), fc.dictionary(fc.constantFrom('progressToken', 'progress', 'requestId', 'uri', 'level', 'data', 'logger', 'taskId'), fc.oneof(fc.constantFrom<Json>('__ID__', 1, 'x'), oddValue), { maxKeys: 4 })))
    .map(([method, params]) => asLine(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params })),
  fc.tuple(fc.constantFrom(...REQUESTS), anyId, fc.oneof(fc.constant<Json>({}), fc.constant<Json>({ messages: [], maxTokens: 5 }), oddValue))
    .map(([method, id, params]) => asLine({ jsonrpc: '2.0', id, method, params })),
  fc.tuple(anyId, validResult).map(([id, result]) => asLine({ jsonrpc: '2.0', id, result })),
  fc.oneof(
    fc.constantFrom('', ' ', '\r', 'null', '[]', '{}', '1e400', '{"jsonrpc":"2.0"', '[{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}]', '\u0000\u0001', '\ufeff{"jsonrpc":"2.0","method":"x"}'),
    fc.string({ unit: 'binary', maxLength: 60 }).map(s => s.replace(/\n/g, ' ')),
    fc.integer({ min: 1_000, max: 64 * 1024 }).map(n => 'z'.repeat(n))
  )
)

/** A tools/list answer that lies (the fixture tells the truth on the next one). */
const lyingList: fc.Arbitrary<string[]> = fc.oneof(
  fc.constant<string[]>([asLine({ jsonrpc: '2.0', id: '__ID__', result: { tools: 'none' } })]),
  fc.constant<string[]>([asLine({ jsonrpc: '2.0', id: '__ID__', result: { tools: [{ name: 5 }, null, { name: 'lie' }, { name: 'x'.repeat(300), inputSchema: { type: 'object' } }] } })]),
  fc.constant<string[]>([asLine({ jsonrpc: '2.0', id: '__ID__', result: { tools: [{ name: 'lie', inputSchema: { type: 'object' } }], nextCursor: 'loop' } })]),
  fc.tuple(oddValue, fc.array(mutation, { maxLength: 2 })).map(([v, ms]) => [asLine(mutate({ jsonrpc: '2.0', id: '__ID__', result: { tools: [{ name: 'lie', inputSchema: { type: 'object' }, annotations: v }] } }, ms))]),
  fc.constant<string[]>([])
)

/** One plan: lies and unsolicited lines around (usually) the true answer, with short pauses. */
export const liePlan: fc.Arbitrary<LiePlan> = fc.record({
  before: fc.array(fc.oneof(unsolicited, wrongAnswer, fc.integer({ min: 0, max: 30 })), { maxLength: 4 }),
  final: fc.oneof(
    { weight: 4, arbitrary: rightAnswer.map(l => [l]) },
    { weight: 1, arbitrary: rightAnswer.map(l => [l, l]) },
    { weight: 1, arbitrary: fc.tuple(rightAnswer, wrongAnswer).map(([a, b]) => [a, b]) },
    { weight: 1, arbitrary: wrongAnswer.map(l => [l]) },
    { weight: 1, arbitrary: fc.constant([]) }
  ),
  after: fc.array(fc.oneof(unsolicited, wrongAnswer), { maxLength: 2 }),
  listAnswer: fc.option(lyingList, { nil: undefined, freq: 8 }),
  // Over HTTP: the lines as SSE events on the POST's stream, as one JSON body, or an HTTP status.
  http: fc.oneof(
    { weight: 6, arbitrary: fc.constant<'sse'>('sse') },
    { weight: 2, arbitrary: fc.constant<'json'>('json') },
    { weight: 1, arbitrary: fc.constantFrom(200, 204, 302, 400, 404, 429, 500, 503) }
  )
}).map(({ before, final, after, listAnswer, http }) => {
  const lines: Array<string | number> = [...before, ...final, ...after]
  if (listAnswer === undefined) return { lines, http }
  return { lines: [...lines, asLine({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })], listAnswer, http }
})
