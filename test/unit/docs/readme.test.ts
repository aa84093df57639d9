import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fencedBlocks, readRepoText } from '../../helpers/markdown.ts'

// The README sells and starts; the rest lives in docs/ (issue 31). These keep it that way.

describe('README.md', () => {
  it('stays a page: at most 300 lines', () => {
    const lines = readRepoText('README.md').split('\n').length
    assert.ok(lines <= 300, `README.md has ${lines} lines; move the detail into docs/`)
  })

  it('shows the two commands, and its test command is the one CI runs (npm test)', () => {
    const commands = fencedBlocks('README.md').filter(b => b.info === 'sh').map(b => b.text.trim())
    assert.ok(commands.includes('npm ci && npm start'))
    assert.ok(commands.includes('npm ci && npm test'))
    assert.match(readRepoText('.ci/run'), /^npm test$/m)
  })
})
