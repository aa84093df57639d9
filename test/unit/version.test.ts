import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { VERSION } from '../../src/version.ts'

describe('VERSION', () => {
  it('equals the version in package.json', async () => {
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }
    assert.equal(typeof pkg.version, 'string')
    assert.equal(VERSION, pkg.version)
  })

  it('is a semantic version', () => {
    assert.match(VERSION, /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/)
  })
})
