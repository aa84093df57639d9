import { test } from 'node:test'
import assert from 'node:assert/strict'
import { buildUpstreamEntry } from '../../../src/registry/upstream-entry.ts'
import { serverDetailSchema } from '../../../src/registry/server-json.ts'
import { upstreamNameFor } from '../../../src/registry/upstream-name.ts'

// The server.json shapes no recorded fixture covers: remote headers and {variables}, arguments. The
// documents follow the registry's own examples (docs/reference/server-json/generic-server-json.md).

const server = (doc: unknown) => serverDetailSchema.parse(doc)

test('remote headers become references named after the upstream, a secret one with its comment, a default kept', () => {
  const built = buildUpstreamEntry(server({
    name: 'io.modelcontextprotocol.anonymous/hybrid-mcp',
    version: '1.5.0',
    remotes: [
      { type: 'sse', url: 'https://mcp.anonymous.modelcontextprotocol.io/sse', headers: [{ name: 'X-API-Key', isRequired: true, isSecret: true, description: 'API key for authentication' }, { name: 'X-Region', default: 'us-east-1', choices: ['us-east-1', 'eu-west-1'] }] },
      { type: 'streamable-http', url: 'https://{tenant}.example.com/mcp', headers: [{ name: 'Authorization', value: 'Bearer {api_key}' }], variables: { tenant: { isRequired: true, description: 'your tenant' } } }
    ]
  }), { source: 'remote' })
  assert.ok(!('error' in built))
  /* eslint-disable no-template-curly-in-string */
  assert.deepEqual(built.entry, { name: 'hybrid', transport: 'streamable-http', url: 'https://${HYBRID_TENANT}.example.com/mcp', headers: { Authorization: 'Bearer ${HYBRID_API_KEY}' } })
  assert.deepEqual(built.required.sort(), ['HYBRID_API_KEY', 'HYBRID_TENANT'])
  const sse = buildUpstreamEntry(server({ name: 'io.x/y', remotes: [{ type: 'sse', url: 'https://a.example/sse', headers: [{ name: 'X-API-Key', isRequired: true, isSecret: true }, { name: 'X-Region', default: 'us-east-1' }] }] }), {})
  assert.ok(!('error' in sse))
  assert.deepEqual(sse.entry, { name: 'y', transport: 'sse', url: 'https://a.example/sse', headers: { 'X-API-Key': '${Y_X_API_KEY}', 'X-Region': '${Y_X_REGION:-us-east-1}' } })
  /* eslint-enable no-template-curly-in-string */
  assert.deepEqual(sse.comments, [{ path: ['headers', 'X-API-Key'], text: 'secret: set Y_X_API_KEY in the environment' }])
})

test('package arguments: fixed values, defaults, required ones as references, flags, optional ones listed', () => {
  const built = buildUpstreamEntry(server({
    name: 'io.github.example/database-manager',
    version: '3.1.0',
    packages: [{
      registryType: 'npm',
      identifier: '@example/db-mcp',
      version: '3.1.0',
      transport: { type: 'stdio' },
      runtimeArguments: [{ type: 'named', name: '-y' }],
      packageArguments: [
        { type: 'positional', value: 'serve' },
        { type: 'named', name: '--host', default: 'localhost', isRequired: true },
        { type: 'named', name: '--port', description: 'Database port', format: 'number' },
        { type: 'named', name: '--read-only', format: 'boolean', value: 'true' },
        { type: 'positional', valueHint: 'database_name', isRequired: true, description: 'Name of the database' }
      ]
    }]
  }), {})
  assert.ok(!('error' in built))
  assert.deepEqual(built.entry.args, ['-y', '@example/db-mcp@3.1.0', 'serve', '--host', 'localhost', '--read-only', '${DATABASE_MANAGER_DATABASE_NAME}']) // eslint-disable-line no-template-curly-in-string
  assert.ok(built.header.includes('optional argument --port not set (Database port)'), built.header.join('\n'))
  assert.deepEqual(built.comments, [{ path: ['args', 6], text: 'required: set DATABASE_MANAGER_DATABASE_NAME in the environment (Name of the database)' }])
  assert.equal(built.name, 'database-manager')
})

test('a literal ${ from the registry is escaped, never a reference to the gateway\'s environment', () => {
  const built = buildUpstreamEntry(server({ name: 'io.x/echo', packages: [{ registryType: 'pypi', identifier: 'echo-mcp', version: '1', packageArguments: [{ type: 'positional', value: '${HOME}' }] }] }), {}) // eslint-disable-line no-template-curly-in-string
  assert.ok(!('error' in built))
  assert.deepEqual(built.entry.args, ['echo-mcp==1', '$${HOME}']) // eslint-disable-line no-template-curly-in-string
})

test('upstream names: short, valid, from the name or else the namespace owner', () => {
  assert.equal(upstreamNameFor('io.github.upstash/context7'), 'context7')
  assert.equal(upstreamNameFor('io.github.github/github-mcp-server'), 'github')
  assert.equal(upstreamNameFor('com.stripe/mcp'), 'stripe')
  assert.equal(upstreamNameFor('com.100hires/100hires'), 'mcp-100hires')
  // The reference servers: a leading server- goes as a trailing -server does.
  assert.equal(upstreamNameFor('io.github.modelcontextprotocol/server-filesystem'), 'filesystem')
  assert.equal(upstreamNameFor('com.example/server'), 'example')
  assert.equal(upstreamNameFor('io.github.someone/A_Very.Long-Name-For-A-Server-That-Goes-On-And-On'), 'a-very-long-name-for-a-server-th')
  assert.match(upstreamNameFor('io.x/___'), /^[a-z][a-z0-9-]*$/)
})
