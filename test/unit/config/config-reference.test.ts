import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { configKeys, type JsonSchemaNode } from '../../../src/config/config-keys.ts'
import { configJsonSchema } from '../../../src/config/write-json-schema.ts'
import { CONFIG_JSON_SCHEMA_FILE, CONFIG_REFERENCE_FILE, configReferenceText, jsonSchemaText, renderConfigReference } from '../../../src/config/write-config-docs.ts'

const keys = configKeys(configJsonSchema() as JsonSchemaNode)

describe('the generated configuration reference', () => {
  it('finds the keys of every section, list element and union variant', () => {
    const paths = new Set(keys.map(k => k.variant === undefined ? k.path : `${k.path} (${k.variant})`))
    for (const path of ['listen.port', 'upstreams[].tools.rename', 'endpoints[].annotations.readOnlyHint', 'policies.rules[].approval.via',
      'upstreams[].auth.clientId (type: oauth)', 'upstreams[].auth.audience (type: token_exchange)', 'admin.console.sessionTtlMs', 'logging.maxStringChars']) {
      assert.ok(paths.has(path), `${path} is not among the keys`)
    }
  })

  it('has a description for every key of the schema (.describe() in src/config/)', () => {
    const missing = keys.filter(k => k.description === undefined || k.description.trim() === '')
      .map(k => k.variant === undefined ? k.path : `${k.path} (${k.variant})`)
    assert.deepEqual(missing, [], 'add .describe() to these keys, then run npm run docs')
  })

  it('states each key\'s default and allowed values', () => {
    const text = renderConfigReference(configJsonSchema() as JsonSchemaNode)
    assert.match(text, /\| `upstreams\[\]\.transport` \| string \| \*required\* \| stdio, streamable-http, sse, websocket \|/)
    assert.match(text, /\| `listen\.port` \| integer \| `8080` \| 0–65535 \|/)
  })

  it('is what npm run docs writes: docs/configuration.md and config/gateway.schema.json match the schema', async () => {
    // The drift check: a schema change without `npm run docs` fails here, in npm test and CI.
    const [reference, jsonSchema] = await Promise.all([readFile(CONFIG_REFERENCE_FILE, 'utf8'), readFile(CONFIG_JSON_SCHEMA_FILE, 'utf8')])
    assert.equal(reference, configReferenceText(), 'docs/configuration.md is stale: run npm run docs')
    assert.equal(jsonSchema, jsonSchemaText(), 'config/gateway.schema.json is stale: run npm run docs')
  })
})
