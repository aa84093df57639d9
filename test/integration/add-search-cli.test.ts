import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { readFile } from 'node:fs/promises'
import { parse as parseYaml } from 'yaml'
import { runCli, runCommand, tempConfig } from '../helpers/cli.ts'
import { startRegistryFixture } from '../helpers/registry-fixture.ts'

// `switchboard search` and `switchboard add` as a user runs them, against a loopback registry serving
// recorded server.json documents of real published servers (test/fixtures/registry/README.md).

const SECRETS = ['GITHUB_TOKEN', 'CONTEXT7_API_KEY', 'VDB_API_TOKEN']

/** The YAML `add` prints: one sequence item, to go under upstreams. */
function printedEntry (stdout: string): Record<string, unknown> {
  const items = parseYaml(stdout) as unknown[]
  assert.equal(items.length, 1, stdout)
  return items[0] as Record<string, unknown>
}

test('search lists the matching servers with what add would make of each; no match is exit 1', { timeout: 60_000 }, async (t) => {
  const registry = await startRegistryFixture(t)
  const found = await runCli(['search', 'github', '--registry', registry.url])
  assert.equal(found.code, 0, found.stderr)
  const lines = found.stdout.trimEnd().split('\n')
  assert.match(lines[0] ?? '', /^NAME\s+VERSION\s+ADD MAKES\s+DESCRIPTION$/)
  assert.equal(lines.length, 1 + 4, found.stdout)
  assert.match(found.stdout, /^io\.github\.github\/github-mcp-server\s+0\.20\.2\s+oci\s+Connect AI assistants to GitHub/m)
  assert.match(found.stdout, /^io\.github\.upstash\/context7\s+1\.0\.0\s+npm\s+Up-to-date code docs for any prompt$/m)
  assert.match(found.stdout, /^io\.github\.0xmortuex\/uefi-mcp\s+0\.1\.0\s+pypi\s+/m)
  assert.ok(registry.requests.some(r => r.startsWith('/v0/servers?') && r.includes('search=github') && r.includes('limit=20')), registry.requests.join('\n'))

  const byDescription = await runCli(['search', 'ATS', '--registry', registry.url])
  assert.equal(byDescription.code, 0, byDescription.stderr)
  assert.match(byDescription.stdout, /^com\.100hires\/100hires\s+1\.0\.2\s+remote \(streamable-http\)\s+Official MCP server for 100Hires/m)
  const both = await runCli(['search', 'cve', '--registry', registry.url])
  assert.match(both.stdout, /^kr\.ai\.vdb\/vdb\s+0\.1\.2\s+pypi \(\+remote\)\s+Check packages for CVEs/m)

  const limited = await runCli(['search', 'io.github', '--registry', registry.url, '--limit', '2'])
  assert.equal(limited.code, 0, limited.stderr)
  assert.equal(limited.stdout.trimEnd().split('\n').length, 3)
  assert.match(limited.stderr, /more servers match/)

  const none = await runCli(['search', 'no-such-thing', '--registry', registry.url])
  assert.equal(none.code, 1)
  assert.equal(none.stderr, 'switchboard search: no server in the registry matches "no-such-thing"\n')
})

test('add prints a valid entry for an npm, a PyPI, an OCI and a remote-only server, secrets as references to the environment', { timeout: 120_000 }, async (t) => {
  const registry = await startRegistryFixture(t)
  const add = async (...args: string[]) => await runCommand(process.execPath, ['--import', 'tsx', 'src/main.ts', 'add', ...args, '--registry', registry.url], {}, undefined, SECRETS)

  const npm = await add('io.github.upstash/context7')
  assert.equal(npm.code, 0, npm.stderr)
  assert.deepEqual(printedEntry(npm.stdout), { name: 'context7', transport: 'stdio', command: 'npx', args: ['-y', '@upstash/context7-mcp@1.0.26'], env: { CONTEXT7_API_KEY: '${CONTEXT7_API_KEY:-}' } }) // eslint-disable-line no-template-curly-in-string
  assert.match(npm.stdout, /CONTEXT7_API_KEY: \$\{CONTEXT7_API_KEY:-\} # secret: set CONTEXT7_API_KEY in the environment/)
  assert.match(npm.stdout, /^# io\.github\.upstash\/context7 1\.0\.0: Up-to-date code docs for any prompt$/m)
  assert.ok(registry.requests.includes('/v0/servers/io.github.upstash%2Fcontext7/versions/latest'), registry.requests.join('\n'))

  const pypi = await add('kr.ai.vdb/vdb')
  assert.equal(pypi.code, 0, pypi.stderr)
  assert.deepEqual(printedEntry(pypi.stdout), { name: 'vdb', transport: 'stdio', command: 'uvx', args: ['vdb-mcp==0.1.2'], env: { VDB_API_URL: '${VDB_API_URL:-}', VDB_API_TOKEN: '${VDB_API_TOKEN:-}' } }) // eslint-disable-line no-template-curly-in-string
  assert.match(pypi.stdout, /^# also offered: streamable-http remote \(switchboard add --remote picks the remote\)$/m)
  const remoteOfVdb = await add('kr.ai.vdb/vdb', '--remote', '--as', 'vdb-hosted')
  assert.equal(remoteOfVdb.code, 0, remoteOfVdb.stderr)
  assert.deepEqual(printedEntry(remoteOfVdb.stdout), { name: 'vdb-hosted', transport: 'streamable-http', url: 'https://vdb.ai.kr/mcp' })

  const remote = await add('com.100hires/100hires')
  assert.equal(remote.code, 0, remote.stderr)
  assert.deepEqual(printedEntry(remote.stdout), { name: 'mcp-100hires', transport: 'streamable-http', url: 'https://mcp.100hires.com/mcp' })
  const noPackage = await add('com.100hires/100hires', '--package')
  assert.equal(noPackage.code, 1)
  assert.equal(noPackage.stderr, 'switchboard add: com.100hires/100hires offers streamable-http remote; switchboard add needs an npm, PyPI or OCI package run over stdio\n')

  const oci = await add('io.github.github/github-mcp-server')
  assert.equal(oci.code, 0, oci.stderr)
  // The publisher's own run/-i/--rm/image arguments are not repeated, and the token stays off docker's argv.
  assert.deepEqual(printedEntry(oci.stdout), {
    name: 'github',
    transport: 'stdio',
    command: 'docker',
    args: ['run', '-i', '--rm', '-e', 'GITHUB_PERSONAL_ACCESS_TOKEN', 'ghcr.io/github/github-mcp-server:0.20.2'],
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: '${GITHUB_TOKEN}' } // eslint-disable-line no-template-curly-in-string
  })
  assert.match(oci.stdout, /# secret: set GITHUB_TOKEN in the environment/)
  assert.match(oci.stderr, /^before the gateway starts, set in its environment: GITHUB_TOKEN$/m)
})

test('--write appends to the config keeping its comments, the result passes validate, and a taken name is refused', { timeout: 120_000 }, async (t) => {
  const registry = await startRegistryFixture(t)
  const original = [
    '# The team gateway: reviewed in PR 12',
    'listen: { host: 127.0.0.1, port: 8080 }',
    'upstreams:',
    '  # the knowledge graph, kept in /dev/null for the demo',
    '  - name: memory',
    '    transport: stdio',
    '    command: node',
    '    args: [node_modules/@modelcontextprotocol/server-memory/dist/index.js] # pinned by package.json',
    '    env: { MEMORY_FILE_PATH: /dev/null }',
    '# policies come later',
    ''
  ].join('\n')
  const file = await tempConfig(t, original)
  const cli = async (args: string[], env: Record<string, string> = {}) => await runCommand(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], env, undefined, SECRETS.filter(name => !(name in env)))

  const github = await cli(['add', 'io.github.github/github-mcp-server', '--registry', registry.url, '--config', file, '--write'])
  assert.equal(github.code, 0, github.stderr)
  assert.equal(github.stdout, '')
  assert.match(github.stderr, /^added upstream github \(oci, from io\.github\.github\/github-mcp-server\) to /m)
  const context7 = await cli(['add', 'io.github.upstash/context7', '--registry', registry.url, '--config', file, '--write'])
  assert.equal(context7.code, 0, context7.stderr)

  const written = await readFile(file, 'utf8')
  for (const comment of ['# The team gateway: reviewed in PR 12', '  # the knowledge graph, kept in /dev/null for the demo', '# pinned by package.json', '# policies come later', '# secret: set GITHUB_TOKEN in the environment', '# secret: set CONTEXT7_API_KEY in the environment', '# io.github.upstash/context7 1.0.0']) {
    assert.ok(written.includes(comment), `${comment} kept in:\n${written}`)
  }
  const names = (parseYaml(written) as { upstreams: Array<{ name: string }> }).upstreams.map(u => u.name)
  assert.deepEqual(names, ['memory', 'github', 'context7'])

  const valid = await cli(['validate', '--config', file], { GITHUB_TOKEN: 'ghp_test_only' })
  assert.equal(valid.code, 0, valid.stderr)
  assert.equal(valid.stdout, `${file}: OK (3 upstream(s))\n`)
  const unset = await cli(['validate', '--config', file])
  assert.equal(unset.code, 1, 'the secret is a reference to the environment, not a value in the file')
  assert.match(unset.stderr, /upstreams\[1\]\.env\.GITHUB_PERSONAL_ACCESS_TOKEN: environment variable GITHUB_TOKEN is not set/)

  const again = await cli(['add', 'io.github.upstash/context7', '--registry', registry.url, '--config', file, '--write'])
  assert.equal(again.code, 1)
  assert.equal(again.stderr, `switchboard add: ${file} already has an upstream named context7; nothing written (choose another name with --as <name>)\n`)
  assert.equal(await readFile(file, 'utf8'), written, 'a refused add leaves the file as it was')
  const renamed = await cli(['add', 'io.github.upstash/context7', '--registry', registry.url, '--config', file, '--write', '--as', 'docs'])
  assert.equal(renamed.code, 0, renamed.stderr)
  assert.deepEqual((parseYaml(await readFile(file, 'utf8')) as { upstreams: Array<{ name: string }> }).upstreams.map(u => u.name), ['memory', 'github', 'context7', 'docs'])
})

test('an unknown server and a registry that cannot be reached are clear errors with their own exit codes', { timeout: 60_000 }, async (t) => {
  const registry = await startRegistryFixture(t)
  const unknown = await runCli(['add', 'io.github.nobody/nothing', '--registry', registry.url])
  assert.equal(unknown.code, 1)
  assert.equal(unknown.stdout, '')
  assert.equal(unknown.stderr, `switchboard add: no server named io.github.nobody/nothing in the registry at ${registry.url} (names look like io.github.owner/name; find one with switchboard search <words>)\n`)

  // A port that was just free and is closed again: nothing listens there.
  const probe = createServer()
  await new Promise<void>(resolve => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as { port: number }
  await new Promise<void>(resolve => probe.close(() => { resolve() }))
  const down = `http://127.0.0.1:${port}`
  const add = await runCli(['add', 'io.github.upstash/context7', '--registry', down])
  assert.equal(add.code, 3)
  assert.match(add.stderr, new RegExp(`^switchboard add: cannot reach the registry at http://127\\.0\\.0\\.1:${port}: ECONNREFUSED`))
  const search = await runCli(['search', 'github', '--registry', down])
  assert.equal(search.code, 3)
  assert.match(search.stderr, /^switchboard search: cannot reach the registry at .*ECONNREFUSED/)

  const badUrl = await runCli(['add', 'x/y', '--registry', 'ftp://registry.example'])
  assert.equal(badUrl.code, 2)
  assert.match(badUrl.stderr, /--registry must be an http\(s\) URL/)
  const writeWithoutConfig = await runCli(['add', 'x/y', '--write', '--registry', registry.url])
  assert.equal(writeWithoutConfig.code, 2)
  assert.match(writeWithoutConfig.stderr, /--write needs --config <file>/)
})

test('a registry that answers with an error status is exit 3; a deprecated server is added with a warning', { timeout: 60_000 }, async (t) => {
  const failing = await startRegistryFixture(t, { failWith: 503 })
  const add = await runCli(['add', 'io.github.upstash/context7', '--registry', failing.url])
  assert.equal(add.code, 3)
  assert.equal(add.stderr, `switchboard add: the registry at ${failing.url} answered HTTP 503 for server named io.github.upstash/context7: {"error":"Service unavailable"}\n`)

  const registry = await startRegistryFixture(t, { statuses: { 'io.github.0xmortuex/uefi-mcp': { status: 'deprecated', statusMessage: 'use io.github.0xmortuex/uefi-mcp2' } } })
  const deprecated = await runCli(['add', 'io.github.0xmortuex/uefi-mcp', '--registry', registry.url])
  assert.equal(deprecated.code, 0, deprecated.stderr)
  assert.match(deprecated.stderr, /^warning: the registry marks io\.github\.0xmortuex\/uefi-mcp deprecated: use io\.github\.0xmortuex\/uefi-mcp2$/m)
  assert.equal((printedEntry(deprecated.stdout) as { command: string }).command, 'uvx')
})
