import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { runCli } from '../../helpers/cli.ts'
import { fencedBlocks, markdownFiles } from '../../helpers/markdown.ts'

// Every line of a ```sh run block in README.md and docs/ is a `npx switchboard …` command that needs
// no network and no secrets; each runs here, from the repository root, as the docs show it, and must
// exit 0 (or the status a trailing `# exit N` names). See docs/architecture.md, "Docs conventions".

interface Example { file: string, line: number, args: string[], exit: number }

/** Shell words of a line: whitespace-separated, with '…' and "…" quoting (no expansion). */
function words (line: string): string[] {
  const out: string[] = []
  for (const m of line.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g)) out.push(m[1] ?? m[2]?.replace(/\\(.)/g, '$1') ?? m[3] ?? '')
  return out
}

function examples (): Example[] {
  const found: Example[] = []
  for (const file of markdownFiles()) {
    for (const block of fencedBlocks(file)) {
      const [language, ...markers] = block.info.split(/\s+/)
      if (language !== 'sh' || !markers.includes('run')) continue
      block.text.split('\n').forEach((raw, i) => {
        const exit = /#\s*exit\s+(\d+)\s*$/.exec(raw)
        const command = raw.replace(/\s+#.*$/, '').trim()
        if (command === '' || command.startsWith('#')) return
        const [npx, bin, ...args] = words(command)
        const line = block.line + 1 + i
        assert.ok(npx === 'npx' && bin === 'switchboard', `${file}:${line}: a run block holds only npx switchboard commands`)
        found.push({ file, line, args, exit: Number(exit?.[1] ?? 0) })
      })
    }
  }
  return found
}

describe('CLI examples in README.md and docs/', () => {
  const all = examples()

  it('finds the README\'s examples', () => {
    assert.ok(all.some(e => e.file === 'README.md' && e.args.includes('--help')))
  })

  for (const example of all) {
    it(`${example.file}:${example.line} switchboard ${example.args.join(' ')}`, async () => {
      const result = await runCli(example.args)
      assert.equal(result.code, example.exit, result.stderr)
      assert.notEqual(result.stdout.trim(), '', 'it printed nothing')
    })
  }
})
