import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runCli, tempConfig } from '../helpers/cli.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'

// `switchboard client-config` as a user runs it: a real config, real upstreams started to count tools.

const EXTRA_TOOLS = 40

function config (): string {
  const big = fixtureCommand(['--name', 'big', '--extra-tools', String(EXTRA_TOOLS)])
  return JSON.stringify({
    listen: { host: '127.0.0.1', port: 9123 },
    upstreams: [
      { name: 'big', transport: 'stdio', command: big.command, args: big.args },
      { name: 'memory', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-memory/dist/index.js'], env: { MEMORY_FILE_PATH: '/dev/null' } }
    ],
    auth: { apiKeys: [{ id: 'ci', key: 'ci-key-0123456789abcdef' }] },
    endpoints: [
      { name: 'everything', default: true },
      { name: 'graph', upstreams: ['memory'] },
      { name: 'finder', discovery: 'search' }
    ]
  })
}

test('prints the snippet on stdout and warns on stderr when the endpoint has more tools than the client takes', { timeout: 60_000 }, async (t) => {
  const file = await tempConfig(t, config())
  const cursor = await runCli(['client-config', '--config', file, '--endpoint', 'everything', '--client', 'cursor'])
  assert.equal(cursor.code, 0, cursor.stderr)
  assert.deepEqual(JSON.parse(cursor.stdout), { mcpServers: { 'switchboard-everything': { url: 'http://127.0.0.1:9123/mcp/everything', headers: { Authorization: 'Bearer ${env:SWITCHBOARD_TOKEN}' } } } }) // eslint-disable-line no-template-curly-in-string
  const count = /^endpoint everything: (\d+) tool\(s\), counted from the lists of 2 of 2 upstream\(s\)/m.exec(cursor.stderr)
  assert.ok(count !== null, cursor.stderr)
  assert.ok(Number(count[1]) > EXTRA_TOOLS + 9)
  assert.match(cursor.stderr, new RegExp(`^warning: Cursor will be offered ${count[1]} tools, more than its limit of 40`, 'm'))
  assert.doesNotMatch(cursor.stderr, /ci-key/, 'no secret from the config is printed')

  const graph = await runCli(['client-config', '--config', file, '--endpoint', 'graph', '--client', 'vscode'])
  assert.equal(graph.code, 0, graph.stderr)
  assert.match(graph.stderr, /^endpoint graph: 9 tool\(s\).*VS Code takes at most 128$/m)
  assert.doesNotMatch(graph.stderr, /warning/)

  const codex = await runCli(['client-config', '--config', file, '--client', 'codex', '--url', 'https://gw.example.com/'])
  assert.equal(codex.code, 0, codex.stderr)
  assert.equal(codex.stdout, '[mcp_servers.switchboard]\nurl = "https://gw.example.com/mcp"\nbearer_token_env_var = "SWITCHBOARD_TOKEN"\n')
  assert.match(codex.stderr, /^\/mcp: \d+ tool\(s\).*no tool limit is known for Codex$/m, 'without --endpoint: /mcp, which serves the default endpoint')
})

test('a search endpoint is two tools without connecting; unknown endpoint or client is a clear error with a non-zero exit', { timeout: 120_000 }, async (t) => {
  const file = await tempConfig(t, config())
  const finder = await runCli(['client-config', '--config', file, '--endpoint', 'finder', '--client', 'claude-code'])
  assert.equal(finder.code, 0, finder.stderr)
  assert.equal(finder.stdout, 'claude mcp add --transport http switchboard-finder http://127.0.0.1:9123/mcp/finder --header "Authorization: Bearer $SWITCHBOARD_TOKEN"\n')
  assert.match(finder.stderr, /endpoint finder: 2 tools \(search_tools and call_tool, discovery: search\); no tool limit is known for Claude Code/)
  const unknown = await runCli(['client-config', '--config', file, '--endpoint', 'findr', '--client', 'cursor'])
  assert.equal(unknown.code, 2)
  assert.equal(unknown.stderr, `switchboard client-config: no endpoint named findr in ${file} (endpoints: everything, graph, finder)\n`)
  const client = await runCli(['client-config', '--config', file, '--endpoint', 'finder', '--client', 'zed'])
  assert.equal(client.code, 2)
  assert.match(client.stderr, /^switchboard client-config: unknown client zed \(one of cursor, vscode, claude-code, claude-desktop, codex\)\nusage:/)
  assert.equal(unknown.stdout + client.stdout, '')
})
