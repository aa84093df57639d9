import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CLIENTS, clientSnippet, toolCountWarning } from '../../../src/ops/client-config.ts'

const URL_ = 'http://127.0.0.1:8080/mcp/dev'

test('the JSON hosts get valid JSON naming the endpoint\'s URL, and a credential only as a variable', () => {
  const cursor = JSON.parse(clientSnippet({ client: 'cursor', server: 'switchboard-dev', url: URL_, tokenEnv: 'SB_KEY' }).text)
  assert.deepEqual(cursor, { mcpServers: { 'switchboard-dev': { url: URL_, headers: { Authorization: 'Bearer ${env:SB_KEY}' } } } }) // eslint-disable-line no-template-curly-in-string
  const vscode = JSON.parse(clientSnippet({ client: 'vscode', server: 'switchboard-dev', url: URL_, tokenEnv: 'SB_KEY' }).text)
  assert.equal(vscode.servers['switchboard-dev'].type, 'http')
  assert.equal(vscode.servers['switchboard-dev'].headers.Authorization, 'Bearer ${input:switchboard-dev-token}') // eslint-disable-line no-template-curly-in-string
  assert.deepEqual(vscode.inputs, [{ type: 'promptString', id: 'switchboard-dev-token', description: 'API key or token for switchboard-dev', password: true }])
  const desktop = JSON.parse(clientSnippet({ client: 'claude-desktop', server: 'switchboard-dev', url: URL_, tokenEnv: 'SB_KEY' }).text)
  assert.deepEqual(desktop.mcpServers['switchboard-dev'].args, ['-y', 'mcp-remote', URL_, '--header', 'Authorization:${AUTH_HEADER}']) // eslint-disable-line no-template-curly-in-string
})

test('without auth no header appears anywhere; mcp-remote is told to allow plain http beyond loopback', () => {
  for (const client of CLIENTS) {
    const { text } = clientSnippet({ client, server: 'switchboard', url: URL_, tokenEnv: undefined })
    assert.ok(text.includes(URL_), client)
    assert.doesNotMatch(text, /Authorization|bearer|inputs/i, client)
  }
  const remote = JSON.parse(clientSnippet({ client: 'claude-desktop', server: 's', url: 'http://gw.internal:8080/mcp', tokenEnv: undefined }).text)
  assert.deepEqual(remote.mcpServers.s.args, ['-y', 'mcp-remote', 'http://gw.internal:8080/mcp', '--allow-http'])
})

test('Claude Code gets its command and Codex its TOML table', () => {
  assert.equal(clientSnippet({ client: 'claude-code', server: 'switchboard-dev', url: URL_, tokenEnv: 'SB_KEY' }).text,
    `claude mcp add --transport http switchboard-dev ${URL_} --header "Authorization: Bearer $SB_KEY"\n`)
  assert.equal(clientSnippet({ client: 'codex', server: 'switchboard-dev', url: URL_, tokenEnv: 'SB_KEY' }).text,
    `[mcp_servers.switchboard-dev]\nurl = "${URL_}"\nbearer_token_env_var = "SB_KEY"\n`)
})

test('warns only past a known limit: Cursor 40, VS Code 128, none known for the others', () => {
  assert.equal(toolCountWarning('cursor', 40), undefined)
  assert.match(toolCountWarning('cursor', 41) ?? '', /^warning: Cursor will be offered 41 tools, more than its limit of 40/)
  assert.equal(toolCountWarning('vscode', 128), undefined)
  assert.match(toolCountWarning('vscode', 129) ?? '', /limit of 128/)
  for (const client of ['claude-code', 'claude-desktop', 'codex'] as const) assert.equal(toolCountWarning(client, 10_000), undefined)
})
