import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig, parseConfig, type ConfigIssue } from '../../../src/config/load-config.ts'
import {
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_LISTEN_HOST,
  DEFAULT_LISTEN_PORT,
  DEFAULT_MAX_NAME_LENGTH,
  DEFAULT_PAGE_SIZE,
  DEFAULT_SEPARATOR
} from '../../../src/config/schema.ts'
import { SwitchboardError, isSwitchboardError } from '../../../src/errors.ts'

function issuesOf (text: string, env: NodeJS.ProcessEnv = {}): readonly ConfigIssue[] {
  try {
    parseConfig(text, env)
  } catch (err: unknown) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`)
    return err.issues
  }
  assert.fail('the config was accepted')
}

function paths (issues: readonly ConfigIssue[]): string[] {
  return issues.map(i => i.path)
}

function issueAt (issues: readonly ConfigIssue[], path: string): ConfigIssue {
  const found = issues.find(i => i.path === path)
  assert.ok(found, `no issue at ${path}; got ${JSON.stringify(issues)}`)
  return found
}

const STDIO = 'transport: stdio\n    command: node'

/** A `${NAME}` reference as it appears in a config file. */
function ref (name: string): string {
  return '$' + `{${name}}`
}

describe('parseConfig defaults', () => {
  it('applies every default to an empty document', () => {
    for (const text of ['', '{}', '# only a comment\n']) {
      const config = parseConfig(text, {})
      assert.deepEqual(config.listen, { host: '127.0.0.1', port: 8080, allowUnauthenticated: false })
      assert.equal(config.catalog.separator, '__')
      assert.equal(config.catalog.maxNameLength, 64)
      assert.equal(config.catalog.pageSize, 500)
      assert.deepEqual(config.upstreams, [])
      assert.equal(config.logLevel, 'info')
      assert.deepEqual(config.http.allowedHosts, [])
      assert.deepEqual(config.http.allowedOrigins, [])
    }
  })

  it('exports defaults that match the documented values', () => {
    assert.equal(DEFAULT_LISTEN_HOST, '127.0.0.1')
    assert.equal(DEFAULT_LISTEN_PORT, 8080)
    assert.equal(DEFAULT_SEPARATOR, '__')
    assert.equal(DEFAULT_MAX_NAME_LENGTH, 64)
    assert.equal(DEFAULT_PAGE_SIZE, 500)
  })

  it('fills defaults inside partly given sections', () => {
    const config = parseConfig('listen: { port: 9000 }\ncatalog: { pageSize: 10 }\n', {})
    assert.deepEqual(config.listen, { host: '127.0.0.1', port: 9000, allowUnauthenticated: false })
    assert.equal(config.catalog.pageSize, 10)
    assert.equal(config.catalog.separator, '__')
    assert.equal(config.catalog.maxNameLength, 64)
  })

  it('fills upstream defaults', () => {
    const config = parseConfig(`upstreams:\n  - name: local\n    ${STDIO}\n`, {})
    const upstream = config.upstreams[0]
    assert.ok(upstream)
    assert.deepEqual(upstream.args, [])
    assert.deepEqual(upstream.env, {})
    assert.deepEqual(upstream.headers, {})
    assert.equal(upstream.timeoutMs, DEFAULT_CALL_TIMEOUT_MS)
    assert.equal(upstream.connectTimeoutMs, DEFAULT_CONNECT_TIMEOUT_MS)
    assert.equal(upstream.prefix, undefined)
    assert.deepEqual(upstream.tools, { include: ['*'], exclude: [], rename: {}, timeoutMs: {} })
  })

  it('accepts every transport with a matching endpoint', () => {
    const config = parseConfig(`upstreams:
  - name: a
    ${STDIO}
  - name: b
    transport: streamable-http
    url: https://example.com/mcp
  - name: c
    transport: sse
    url: http://localhost:3000/sse
  - name: d
    transport: websocket
    url: wss://example.com/ws
  - name: e
    transport: websocket
    url: ws://127.0.0.1:9000
`, {})
    assert.deepEqual(config.upstreams.map(u => u.transport), ['stdio', 'streamable-http', 'sse', 'websocket', 'websocket'])
  })
})

describe('parseConfig environment expansion', () => {
  it('expands variable references from the env object passed in', () => {
    const config = parseConfig(`upstreams:
  - name: gh
    transport: streamable-http
    url: https://\${HOST}/mcp
    headers: { Authorization: "Bearer \${TOKEN}" }
  - name: local
    transport: stdio
    command: \${NODE}
    args: ["--port=\${PORT}", "\${A}\${B}"]
`, { HOST: 'api.example.com', TOKEN: 's3cret', NODE: '/usr/bin/node', PORT: '7', A: 'x', B: 'y' })
    assert.equal(config.upstreams[0]?.url, 'https://api.example.com/mcp')
    assert.deepEqual(config.upstreams[0]?.headers, { Authorization: 'Bearer s3cret' })
    assert.equal(config.upstreams[1]?.command, '/usr/bin/node')
    assert.deepEqual(config.upstreams[1]?.args, ['--port=7', 'xy'])
  })

  it('does not read process.env', () => {
    assert.ok(process.env.PATH !== undefined, 'the test needs PATH set in the real environment')
    const issues = issuesOf(`upstreams:\n  - name: a\n    transport: stdio\n    command: ${ref('PATH')}\n`, {})
    assert.equal(issueAt(issues, 'upstreams[0].command').message, 'environment variable PATH is not set')
  })

  it('expands a value as a plain string, never as YAML structure', () => {
    const config = parseConfig(`upstreams:\n  - name: a\n    transport: stdio\n    command: "${ref('CMD')}"\n`, {
      CMD: 'node\nlogLevel: debug\n  - name: injected'
    })
    assert.equal(config.upstreams.length, 1)
    assert.equal(config.upstreams[0]?.command, 'node\nlogLevel: debug\n  - name: injected')
    assert.equal(config.logLevel, 'info')
  })

  it('leaves $VAR without braces untouched', () => {
    const config = parseConfig('upstreams:\n  - name: a\n    transport: stdio\n    command: echo\n    args: ["$HOME", "$$"]\n', { HOME: '/root' })
    assert.deepEqual(config.upstreams[0]?.args, ['$HOME', '$$'])
  })

  it('expands a variable set to the empty string', () => {
    const config = parseConfig(`upstreams:\n  - name: a\n    transport: stdio\n    command: node\n    args: ["x${ref('EMPTY')}y"]\n`, { EMPTY: '' })
    assert.deepEqual(config.upstreams[0]?.args, ['xy'])
  })

  it('reports a missing variable with its path', () => {
    const issues = issuesOf(`upstreams:
  - name: gh
    transport: streamable-http
    url: https://example.com/mcp
    headers: { Authorization: "Bearer \${GH_TOKEN}" }
`)
    assert.deepEqual(issues, [{ path: 'upstreams[0].headers.Authorization', message: 'environment variable GH_TOKEN is not set' }])
  })

  it('reports every missing variable, in arrays too', () => {
    const issues = issuesOf(`upstreams:\n  - name: a\n    transport: stdio\n    command: "${ref('ONE')}"\n    args: ["ok", "${ref('TWO')}"]\n`, {})
    assert.equal(issueAt(issues, 'upstreams[0].command').message, 'environment variable ONE is not set')
    assert.equal(issueAt(issues, 'upstreams[0].args[1]').message, 'environment variable TWO is not set')
  })
})

describe('parseConfig references: one error per unset variable, defaults, escapes', () => {
  it('reports an unset variable once, without the knock-on errors of the empty value', () => {
    const issues = issuesOf(`auth:
  apiKeys:
    - { id: alice, key: "${ref('ALICE_KEY')}" }
    - { id: bot, key: "${ref('BOT_KEY')}" }
redis: { url: "${ref('REDIS_URL')}" }
rateLimits: { store: redis }
pinning: { store: redis }
admin: { token: "${ref('ADMIN_TOKEN')}" }
upstreams:
  - name: web
    transport: streamable-http
    url: "${ref('WEB_URL')}"
`)
    // Without the filter: "must be at least 16 characters" twice, "same key as apiKeys[0]", a URL
    // error at redis.url and at the two blocks that inherit it, and two more for admin and web.
    assert.deepEqual(issues, [
      { path: 'auth.apiKeys[0].key', message: 'environment variable ALICE_KEY is not set' },
      { path: 'auth.apiKeys[1].key', message: 'environment variable BOT_KEY is not set' },
      { path: 'redis.url', message: 'environment variable REDIS_URL is not set' },
      { path: 'admin.token', message: 'environment variable ADMIN_TOKEN is not set' },
      { path: 'upstreams[0].url', message: 'environment variable WEB_URL is not set' }
    ])
  })

  it('names every unset variable of one value in a single error', () => {
    const issues = issuesOf(`upstreams:\n  - name: a\n    transport: streamable-http\n    url: "https://${ref('HOST')}:${ref('PORT')}/${ref('HOST')}"\n`)
    assert.deepEqual(issues, [{ path: 'upstreams[0].url', message: 'environment variables HOST, PORT are not set' }])
  })

  it('keeps the errors an unset variable does not cause', () => {
    const issues = issuesOf(`listen: { port: 99999 }\nupstreams:\n  - name: a\n    transport: streamable-http\n    url: "${ref('URL')}"\n    timeoutMs: 0\n`)
    assert.deepEqual(paths(issues).sort(), ['listen.port', 'upstreams[0].timeoutMs', 'upstreams[0].url'])
    assert.equal(issueAt(issues, 'upstreams[0].url').message, 'environment variable URL is not set')
  })

  it('takes the default of a VAR:-default reference when the variable is unset or empty, as the shell does', () => {
    const text = `upstreams:
  - name: a
    transport: streamable-http
    url: "${ref('URL:-http://127.0.0.1:3000/mcp')}"
    headers: { X-Empty: "${ref('EMPTY:-fallback')}", X-Set: "${ref('SET:-fallback')}", X-None: "a${ref('NONE:-')}b" }
`
    const config = parseConfig(text, { EMPTY: '', SET: 'value' })
    assert.equal(config.upstreams[0]?.url, 'http://127.0.0.1:3000/mcp')
    assert.deepEqual(config.upstreams[0]?.headers, { 'X-Empty': 'fallback', 'X-Set': 'value', 'X-None': 'ab' })
    assert.equal(parseConfig(text, { URL: 'https://example.com/mcp' }).upstreams[0]?.url, 'https://example.com/mcp')
  })

  it('reads $${ as a literal ${, never expanded', () => {
    const config = parseConfig(`upstreams:\n  - name: a\n    transport: stdio\n    command: sh\n    args: ["-c", "echo $${ref('HOME')} costs $5 in ${ref('HOME')}", "$$"]\n`, { HOME: '/root' })
    assert.deepEqual(config.upstreams[0]?.args, ['-c', `echo ${ref('HOME')} costs $5 in /root`, '$$'])
  })

  it('refuses a malformed or unclosed reference rather than keep it as text', () => {
    const issues = issuesOf(`upstreams:
  - name: a
    transport: stdio
    command: node
    args: ["${ref('FOO-bar')}", "${ref('1ST')}", "x ${ref('OPEN').slice(0, -1)}", "${ref('')}"]
`, { FOO: 'x', OPEN: 'y' })
    assert.deepEqual(paths(issues), ['upstreams[0].args[0]', 'upstreams[0].args[1]', 'upstreams[0].args[2]', 'upstreams[0].args[3]'])
    assert.match(issueAt(issues, 'upstreams[0].args[0]').message, /^malformed reference "\$\{FOO-bar\}": use \$\{NAME\} or \$\{NAME:-default\}/)
    assert.match(issueAt(issues, 'upstreams[0].args[2]').message, /^unclosed reference "\$\{OPEN"/)
  })

  it('refuses an admin token with a default: the default would be a secret in the file', () => {
    const issues = issuesOf(`admin: { token: "${ref('ADMIN_TOKEN:-changeme-changeme-changeme')}" }\n`, { ADMIN_TOKEN: 'x'.repeat(20) })
    assert.deepEqual(paths(issues), ['admin.token'])
    assert.match(issues[0]?.message ?? '', /without a default/)
    assert.ok(!(issues[0]?.message ?? '').includes('changeme'))
    const escaped = issuesOf(`admin: { token: "$${ref('ADMIN_TOKEN')}-typed-into-the-file" }\n`, { ADMIN_TOKEN: 'x'.repeat(20) })
    assert.deepEqual(paths(escaped), ['admin.token'], 'an escaped reference is literal text')
    assert.match(escaped[0]?.message ?? '', /must come from the environment/)
  })
})

describe('parseConfig unknown keys', () => {
  it('suggests the closest known key for a misspelt one', () => {
    const issues = issuesOf(`upstream:
  - name: a
listen: { hots: x }
upstreams:
  - name: a
    ${STDIO}
    tools: { timeoutMS: { x: 1000 } }
    timeout: 5000
`)
    assert.equal(issueAt(issues, '(root)').message, 'Unrecognized key: "upstream" (did you mean "upstreams"?)')
    assert.equal(issueAt(issues, 'listen').message, 'Unrecognized key: "hots" (did you mean "host"?)')
    assert.equal(issueAt(issues, 'upstreams[0].tools').message, 'Unrecognized key: "timeoutMS" (did you mean "timeoutMs"?)')
    assert.equal(issueAt(issues, 'upstreams[0]').message, 'Unrecognized key: "timeout" (did you mean "timeoutMs"?)')
  })

  it('suggests nothing for a key unlike any known one, and lists several unknown keys in one error', () => {
    const issues = issuesOf('catalog: { bogus: 1, pagesize: 10 }\nauth:\n  apiKeys: [{ id: a, key: "0123456789abcdef0", rolse: [x] }]\n')
    assert.equal(issueAt(issues, 'catalog').message, 'Unrecognized keys: "bogus", "pagesize" (did you mean "pageSize"?)')
    assert.equal(issueAt(issues, 'auth.apiKeys[0]').message, 'Unrecognized key: "rolse" (did you mean "roles"?)')
  })
})

describe('parseConfig errors', () => {
  it('reports every mistake at once, each with its path', () => {
    const text = `
upstreams:
  - name: Bad_Name
    ${STDIO}
  - name: web
    transport: streamable-http
  - name: local
    transport: stdio
  - name: web
    transport: sse
    url: https://example.com/sse
  - name: sock
    transport: websocket
    url: http://example.com/ws
    bogus: 1
catalog:
  maxNameLength: 4
`
    let error: unknown
    try { parseConfig(text, {}, 'gateway.yaml') } catch (err: unknown) { error = err }
    assert.ok(error instanceof ConfigError)
    assert.ok(error instanceof SwitchboardError)
    assert.equal(error.code, 'SB_ERR_CONFIG_INVALID')
    const issues = error.issues
    assert.match(issueAt(issues, 'upstreams[0].name').message, /\^\[a-z\]/)
    assert.match(issueAt(issues, 'upstreams[1].url').message, /required for transport streamable-http/)
    assert.match(issueAt(issues, 'upstreams[2].command').message, /required for transport stdio/)
    assert.match(issueAt(issues, 'upstreams[3].name').message, /duplicate upstream name "web".*upstreams\[1\]/)
    assert.match(issueAt(issues, 'upstreams[4]').message, /bogus/)
    assert.match(issueAt(issues, 'upstreams[4].url').message, /ws: or wss:/)
    assert.match(issueAt(issues, 'catalog.maxNameLength').message, /16/)
    assert.equal(issues.length, 7, `unexpected extra issues: ${JSON.stringify(issues)}`)
    assert.ok(error.message.startsWith('gateway.yaml: 7 error(s)'))
    for (const path of paths(issues)) assert.ok(error.message.includes(`  ${path}: `), `message lacks ${path}`)
  })

  it('refuses protocol 2026-07-28 on a transport that cannot speak it, and defaults protocol to auto', () => {
    const issues = issuesOf(`upstreams:
  - name: local
    ${STDIO}
    protocol: "2026-07-28"
  - name: sock
    transport: websocket
    url: ws://example.com/ws
    protocol: "2025-11-25"
`)
    assert.match(issueAt(issues, 'upstreams[0].protocol').message, /2026-07-28 needs transport streamable-http/)
    assert.equal(issues.length, 1)
    assert.equal(parseConfig('upstreams:\n  - name: web\n    transport: streamable-http\n    url: http://127.0.0.1:9/mcp\n', {}).upstreams[0]?.protocol, 'auto')
  })

  it('reports unknown keys at every level', () => {
    const issues = issuesOf(`listn: {}
listen: { hots: x }
upstreams:
  - name: a
    ${STDIO}
    tools: { inclde: ["*"] }
`)
    assert.match(issueAt(issues, '(root)').message, /listn/)
    assert.match(issueAt(issues, 'listen').message, /hots/)
    assert.match(issueAt(issues, 'upstreams[0].tools').message, /inclde/)
  })

  it('checks urls and endpoints against the transport', () => {
    const issues = issuesOf(`upstreams:
  - name: a
    transport: streamable-http
    url: ws://example.com/mcp
  - name: b
    transport: sse
    url: not a url
  - name: c
    ${STDIO}
    url: https://example.com
  - name: d
    transport: websocket
    url: wss://example.com
    command: node
  - name: e
    transport: carrier-pigeon
`)
    assert.match(issueAt(issues, 'upstreams[0].url').message, /http: or https:/)
    assert.match(issueAt(issues, 'upstreams[1].url').message, /http: or https:/)
    assert.match(issueAt(issues, 'upstreams[2].url').message, /not allowed for transport stdio/)
    assert.match(issueAt(issues, 'upstreams[3].command').message, /not allowed for transport websocket/)
    issueAt(issues, 'upstreams[4].transport')
  })

  it('rejects out-of-range and malformed scalar settings', () => {
    const issues = issuesOf(`listen: { port: 70000 }
catalog: { separator: "::", maxNameLength: 200, pageSize: 0 }
logLevel: loud
upstreams:
  - name: a
    ${STDIO}
    prefix: 9lives
    timeoutMs: 0
`)
    for (const path of ['listen.port', 'catalog.separator', 'catalog.maxNameLength', 'catalog.pageSize', 'logLevel', 'upstreams[0].prefix', 'upstreams[0].timeoutMs']) {
      issueAt(issues, path)
    }
  })

  it('accepts an empty prefix', () => {
    const config = parseConfig(`upstreams:\n  - name: a\n    ${STDIO}\n    prefix: ""\n`, {})
    assert.equal(config.upstreams[0]?.prefix, '')
  })

  it('reports a root that is not a mapping', () => {
    const issues = issuesOf('- a\n- b\n')
    assert.deepEqual(paths(issues), ['(root)'])
  })

  it('reports a missing variable and a schema error together', () => {
    const issues = issuesOf(`listen: { port: 99999 }\nupstreams:\n  - name: a\n    transport: stdio\n    command: "${ref('NOPE')}"\n`)
    issueAt(issues, 'upstreams[0].command')
    issueAt(issues, 'listen.port')
  })

  it('still reports duplicate names when another upstream has a type error', () => {
    const issues = issuesOf(`upstreams:
  - name: a
    ${STDIO}
  - name: a
    ${STDIO}
  - name: b
    ${STDIO}
    timeoutMs: fast
`)
    issueAt(issues, 'upstreams[2].timeoutMs')
    issueAt(issues, 'upstreams[1].name')
  })

  it('still reports transport rules when the same upstream has a type error', () => {
    const issues = issuesOf('upstreams:\n  - name: a\n    transport: stdio\n    timeoutMs: fast\n')
    issueAt(issues, 'upstreams[0].timeoutMs')
    issueAt(issues, 'upstreams[0].command')
  })

  it('gives a clear error for invalid YAML', () => {
    let error: unknown
    try { parseConfig('listen: [\n  host: x\n', {}, 'broken.yaml') } catch (err: unknown) { error = err }
    assert.ok(error instanceof ConfigError)
    assert.equal(error.code, 'SB_ERR_CONFIG_INVALID')
    assert.equal(error.issues.length, 1)
    assert.equal(error.issues[0]?.path, '(root)')
    assert.match(error.issues[0]?.message ?? '', /^not valid YAML: /)
    assert.match(error.message, /^broken\.yaml: 1 error\(s\)/)
    assert.match(error.message, /line \d+/)
  })

  it('reports duplicate YAML keys as invalid YAML', () => {
    const issues = issuesOf('logLevel: info\nlogLevel: debug\n')
    assert.match(issues[0]?.message ?? '', /not valid YAML/)
  })
})

describe('parseConfig result', () => {
  it('is deep-frozen', () => {
    const config = parseConfig(`upstreams:\n  - name: a\n    ${STDIO}\n    args: [x]\n    env: { K: v }\n    tools: { rename: { a: b } }\n`, {})
    const upstream = config.upstreams[0]
    assert.ok(upstream)
    for (const value of [config, config.listen, config.catalog, config.http, config.http.allowedHosts, config.shutdown, config.upstreams, upstream, upstream.args, upstream.env, upstream.headers, upstream.tools, upstream.tools.include, upstream.tools.rename]) {
      assert.ok(Object.isFrozen(value))
    }
    assert.throws(() => { (config.listen as { port: number }).port = 1 }, TypeError)
    assert.throws(() => { (upstream.args as string[]).push('y') }, TypeError)
    assert.throws(() => { (upstream.env as Record<string, string>).K = 'w' }, TypeError)
  })
})

describe('loadConfig', () => {
  it('reads and parses a file with the env passed in', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'switchboard-load-'))
    t.after(async () => { await rm(dir, { recursive: true, force: true }) })
    const file = join(dir, 'gateway.yaml')
    await writeFile(file, `listen: { port: 9123 }\nupstreams:\n  - name: a\n    transport: stdio\n    command: "${ref('CMD')}"\n`)
    const config = await loadConfig(file, { CMD: 'node' })
    assert.equal(config.listen.port, 9123)
    assert.equal(config.upstreams[0]?.command, 'node')
  })

  it('names the file in a validation error', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'switchboard-load-'))
    t.after(async () => { await rm(dir, { recursive: true, force: true }) })
    const file = join(dir, 'bad.yaml')
    await writeFile(file, 'listen: { port: -1 }\n')
    await assert.rejects(loadConfig(file, {}), (err: unknown) => {
      assert.ok(err instanceof ConfigError)
      assert.ok(err.message.startsWith(`${file}: 1 error(s)`))
      assert.deepEqual(paths(err.issues), ['listen.port'])
      return true
    })
  })

  it('throws SB_ERR_CONFIG_READ for a missing file', async () => {
    const file = join(tmpdir(), `switchboard-missing-${process.pid}-${Date.now()}.yaml`)
    await assert.rejects(loadConfig(file, {}), (err: unknown) => {
      assert.ok(isSwitchboardError(err, 'SB_ERR_CONFIG_READ'))
      assert.ok(!(err instanceof ConfigError))
      assert.ok(err.message.includes(file))
      assert.ok(err.cause instanceof Error)
      return true
    })
  })
})
