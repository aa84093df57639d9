import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { checkParamHeaders, classifyMessage, encodeHeaderValue, isModernVersion, mcpNameHeader, mirroredParams, type Era } from '../../../src/protocol/modern.ts'
import type { JsonRpcMessage } from '../../../src/protocol/json-rpc.ts'

const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } }
const HEADERS = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'a__echo' }

/** null: no _meta at all. */
function call (meta: Record<string, unknown> | null = ENVELOPE, name = 'a__echo'): JsonRpcMessage {
  return { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: {}, ...(meta === null ? {} : { _meta: meta }) } }
}

function code (era: Era): number | undefined {
  return 'refusal' in era ? era.refusal.code : undefined
}

describe('classifyMessage', () => {
  it('serves a request whose _meta claims 2026-07-28 as modern, with the client\'s capabilities, info and log level', () => {
    const era = classifyMessage(call({ ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' }, 'io.modelcontextprotocol/logLevel': 'info' }), HEADERS)
    assert.deepEqual(era, { era: 'modern', claim: { version: '2026-07-28', clientCapabilities: { elicitation: {} }, clientInfo: { name: 'c', version: '1' }, logLevel: 'info' } })
  })

  it('leaves a message without the claim to the 2025-11-25 path, whatever its other _meta', () => {
    assert.deepEqual(classifyMessage(call(null), { 'mcp-protocol-version': '2025-11-25' }), { era: 'legacy' })
    assert.deepEqual(classifyMessage(call({ progressToken: 1 }), {}), { era: 'legacy' })
    assert.deepEqual(classifyMessage({ jsonrpc: '2.0', id: 1, result: {} }, HEADERS), { era: 'legacy' }, 'a response is never modern')
  })

  it('refuses, in the revision\'s order, headers that contradict the body (-32020) before a broken envelope (-32602) before an unsupported version (-32022)', () => {
    assert.equal(code(classifyMessage(call({ 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }), { ...HEADERS, 'mcp-method': 'tools/list' })), -32020)
    assert.equal(code(classifyMessage(call({ 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }), { ...HEADERS, 'mcp-protocol-version': '2099-01-01' })), -32602, 'no clientCapabilities')
    const unsupported = classifyMessage(call({ ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }), { ...HEADERS, 'mcp-protocol-version': '2099-01-01' })
    assert.deepEqual('refusal' in unsupported ? unsupported.refusal : undefined, { status: 400, code: -32022, message: 'Unsupported protocol version: 2099-01-01', data: { supported: ['2026-07-28'], requested: '2099-01-01' } })
  })

  it('requires MCP-Protocol-Version, Mcp-Method and, for a call, an Mcp-Name equal to the name (plain, base64, or with whitespace around)', () => {
    assert.equal(code(classifyMessage(call(), { 'mcp-method': 'tools/call', 'mcp-name': 'a__echo' })), -32020)
    assert.equal(code(classifyMessage(call(), { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'a__echo' })), -32020)
    assert.equal(code(classifyMessage(call(), { ...HEADERS, 'mcp-name': undefined })), -32020)
    assert.equal(code(classifyMessage(call(), { ...HEADERS, 'mcp-name': 'b__echo' })), -32020)
    assert.equal(classifyMessage(call(), { ...HEADERS, 'mcp-name': ' a__echo\t' }).era, 'modern')
    const unicode = 'a__héllo'
    assert.equal(code(classifyMessage(call(ENVELOPE, unicode), { ...HEADERS, 'mcp-name': `=?base64?${Buffer.from(unicode).toString('base64')}?=` })), undefined)
    assert.equal(code(classifyMessage(call(ENVELOPE, unicode), { ...HEADERS, 'mcp-name': '=?base64?not base64?=' })), -32020)
  })

  it('says a request without the claim but with a modern MCP-Protocol-Version lacks its envelope, and an initialize with one contradicts its header', () => {
    assert.equal(code(classifyMessage(call(null), HEADERS)), -32602)
    const initialize: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } }
    assert.equal(code(classifyMessage(initialize, { 'mcp-protocol-version': '2026-07-28' })), -32020)
    assert.deepEqual(classifyMessage(initialize, {}), { era: 'legacy' })
  })

  it('counts any revision from 2026-07-28 on as modern', () => {
    assert.equal(isModernVersion('2026-07-28'), true)
    assert.equal(isModernVersion('2027-01-01'), true)
    assert.equal(isModernVersion('2025-11-25'), false)
  })
})

describe('headers of a 2026-07-28 request', () => {
  it('encodes a value for a header plainly when it is printable ASCII, else as =?base64?…?= of its UTF-8', () => {
    assert.equal(encodeHeaderValue('a__echo'), 'a__echo')
    assert.equal(encodeHeaderValue('café'), `=?base64?${Buffer.from('café').toString('base64')}?=`)
    assert.equal(encodeHeaderValue(' padded '), `=?base64?${Buffer.from(' padded ').toString('base64')}?=`)
    assert.equal(mcpNameHeader('resources/read', { uri: 'file:///a b' }), 'file:///a b')
    assert.equal(mcpNameHeader('tasks/get', { taskId: 't1' }), 't1')
    assert.equal(mcpNameHeader('tools/list', {}), undefined)
  })

  it('finds the x-mcp-header arguments of a tool and checks Mcp-Param-* against the arguments', () => {
    const tool = { name: 't', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, level: { type: 'integer' }, bad: { 'x-mcp-header': 'no spaces' } } } }
    const mirrored = mirroredParams(tool)
    assert.deepEqual(mirrored, { region: 'Region' })
    assert.equal(checkParamHeaders({ region: 'eu' }, mirrored, { 'mcp-param-region': 'eu' }), undefined)
    assert.equal(checkParamHeaders({ region: 'Hello' }, mirrored, { 'mcp-param-region': '=?base64?SGVsbG8=?=' }), undefined)
    assert.equal(checkParamHeaders({ level: 1 }, mirrored, {}), undefined, 'neither argument nor header')
    for (const [args, headers] of [
      [{ region: 'eu' }, {}],
      [{ region: 'eu' }, { 'mcp-param-region': 'us' }],
      [{ region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG8?=' }],
      [{}, { 'mcp-param-region': 'eu' }]
    ] as const) {
      const refusal = checkParamHeaders(args, mirrored, headers)
      assert.equal(refusal?.status, 400, JSON.stringify([args, headers]))
      assert.equal(refusal?.code, -32020)
    }
  })
})
