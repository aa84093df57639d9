import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ResumableStream } from '../../../src/http/resumable-stream.ts'
import type { SseStream } from '../../../src/http/sse-stream.ts'
import { type JsonRpcMessage, rpcResult } from '../../../src/protocol/json-rpc.ts'
import { MemoryEventStore } from '../../../src/session/event-store.ts'

describe('ResumableStream', () => {
  let deep: Record<string, unknown> = {}
  for (let i = 0; i < 20_000; i++) deep = { a: deep }

  it('records and sends a message that cannot be written as JSON as its stand-in, and goes on', async () => {
    const store = new MemoryEventStore({ maxEventsPerStream: 100, maxStreamsPerSession: 10, maxBytesPerSession: 1024 * 1024 })
    const sent: Array<{ message: JsonRpcMessage, id?: string }> = []
    const connection = { send: (message: JsonRpcMessage, id?: string) => { sent.push({ message, id }) }, close: () => {}, prime: () => {}, onClosed: () => {} }
    const stream = new ResumableStream('S', store)
    stream.start(connection as unknown as SseStream, 1000)
    stream.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1, deep } })
    stream.send(rpcResult(7, { content: [], deep }))
    stream.send(rpcResult(8, { content: [] }))
    assert.deepEqual(sent.map(s => 'method' in s.message ? s.message.method : s.message.id), ['notifications/message', 7, 8])
    assert.equal((sent[1]?.message as { error?: { code: number } }).error?.code, -32603, 'the request is still answered, with an error')
    const replay = await store.replayAfter('S', stream.streamId, `${stream.streamId}.0`)
    assert.deepEqual(replay?.map(e => e.message), sent.map(s => s.message), 'a resume replays what the connection got')
  })
})
