import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFile, readdir } from 'node:fs/promises'
import { parseConfig } from '../../../src/config/load-config.ts'
import { configJsonSchema } from '../../../src/config/write-json-schema.ts'

const REPO = new URL('../../../', import.meta.url)

/** What an example's variable would hold: keys are 32 bytes of base64, URLs URLs, anything else long enough for a token. */
function exampleValue (name: string): string {
  if (name.endsWith('_KEY')) return randomBytes(32).toString('base64')
  if (name.includes('REDIS')) return 'redis://127.0.0.1:6379'
  if (name.endsWith('_URL') || name.endsWith('_ISSUER')) return 'https://example.com'
  return 'example-value-0123456789abcdef'
}

describe('shipped config files', () => {
  it('keeps config/gateway.schema.json in sync with the schema', async () => {
    const onDisk: unknown = JSON.parse(await readFile(new URL('config/gateway.schema.json', REPO), 'utf8'))
    assert.deepEqual(onDisk, configJsonSchema())
  })

  it('ships config/examples/*.yaml that parse cleanly once their environment variables are set', async () => {
    const dir = new URL('config/examples/', REPO)
    const files = (await readdir(dir)).filter(f => f.endsWith('.yaml'))
    assert.ok(files.includes('upstream-auth.yaml'))
    for (const file of files) {
      const text = await readFile(new URL(file, dir), 'utf8')
      const env = Object.fromEntries([...text.matchAll(/\$\{([A-Z0-9_]+)\}/g)].map(([, name = '']) => [name, exampleValue(name)]))
      assert.doesNotThrow(() => parseConfig(text, env, `config/examples/${file}`), file)
    }
  })

  it('ships a config/gateway.yaml that parses cleanly', async () => {
    const text = await readFile(new URL('config/gateway.yaml', REPO), 'utf8')
    const config = parseConfig(text, {}, 'config/gateway.yaml')
    assert.ok(config.upstreams.length > 0)
    for (const upstream of config.upstreams) assert.match(upstream.name, /^[a-z][a-z0-9-]*$/)
  })
})
