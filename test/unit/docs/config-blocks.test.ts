import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { parseConfig } from '../../../src/config/load-config.ts'
import { fencedBlocks, markdownFiles, type FencedBlock } from '../../helpers/markdown.ts'

// Every YAML block of README.md and docs/ whose fence says ```yaml config is a whole config file,
// and must pass the gateway's own loader (docs/architecture.md, "Docs conventions"). Blocks that
// are fragments (one section of a bigger file, a Prometheus config) carry no marker.

/** A value each ${VAR} of a block can hold: keys 32 bytes of base64 (long enough for an API key too), URLs, else a long token. */
function placeholder (name: string): string {
  if (name.includes('REDIS')) return 'redis://127.0.0.1:6379'
  if (name.includes('KEY')) return Buffer.alloc(32, 7).toString('base64')
  if (name.endsWith('_URL') || name.endsWith('_ISSUER')) return 'https://example.com'
  return 'docs-placeholder-0123456789abcdef'
}

export function isConfigBlock (block: FencedBlock): boolean {
  const [language, ...markers] = block.info.split(/\s+/)
  return (language === 'yaml' || language === 'yml') && markers.includes('config')
}

function configBlocks (): FencedBlock[] {
  return markdownFiles().flatMap(file => fencedBlocks(file)).filter(isConfigBlock)
}

describe('config blocks in README.md and docs/', () => {
  const blocks = configBlocks()

  it('finds the marked blocks (the README has a minimal and a production config)', () => {
    assert.ok(blocks.filter(b => b.file === 'README.md').length >= 2)
    assert.ok(blocks.some(b => b.file.startsWith('docs/')))
  })

  for (const block of blocks) {
    it(`${block.file}:${block.line} is a config the gateway accepts`, () => {
      const env = Object.fromEntries([...block.text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)]
        .map(([, name = '']) => [name, placeholder(name)]))
      // parseConfig throws one error listing every problem with its path.
      assert.doesNotThrow(() => parseConfig(block.text, env, `${block.file}:${block.line}`))
    })
  }
})
