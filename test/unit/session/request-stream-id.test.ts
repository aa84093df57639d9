import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { formatEventId, newStreamId, parseEventId } from '../../../src/session/event-store.ts'
import { requestStreamId, requestStreamOrigin } from '../../../src/session/request-stream-id.ts'

describe('request stream ids', () => {
  it('name the replica and the request id, and make valid event ids', () => {
    for (const requestId of ['sk1-42', 7, 0, 'with spaces and ünïcode', -3.5]) {
      const streamId = requestStreamId('r0Ab-_', requestId)
      assert.deepEqual(requestStreamOrigin(streamId), { replica: 'r0Ab-_', requestId })
      assert.equal(parseEventId(formatEventId(streamId, 12))?.streamId, streamId)
    }
  })

  it('leave out a request id too long to fit, and stay valid event ids', () => {
    const streamId = requestStreamId('r1', 'x'.repeat(500))
    assert.deepEqual(requestStreamOrigin(streamId), { replica: 'r1', requestId: null })
    assert.ok(parseEventId(formatEventId(streamId, 2 ** 40)) !== undefined)
  })

  it('say nothing of a GET stream\'s id or of garbage', () => {
    assert.equal(requestStreamOrigin(newStreamId()), undefined)
    for (const text of ['AAAAAAAAAAAAAAAAAAAAAAAA', `${newStreamId()}bm90IGpzb24`, `${newStreamId()}${Buffer.from('{"a":1}').toString('base64url')}`, `${newStreamId()}${Buffer.from('[1,2]').toString('base64url')}`, 'x'.repeat(300)]) {
      assert.equal(requestStreamOrigin(text), undefined, text)
    }
  })
})
