import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, statSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { REPO_ROOT, headingAnchors, markdownFiles, relativeLinks } from '../../helpers/markdown.ts'

function problems (): string[] {
  const found: string[] = []
  for (const file of markdownFiles()) {
    for (const link of relativeLinks(file)) {
      const [pathPart = '', anchor] = link.target.split('#', 2)
      const target = pathPart === '' ? file : normalize(join(dirname(file), decodeURIComponent(pathPart))).replace(/\/$/, '')
      const where = `${link.file}:${link.line} → ${link.target}`
      if (target.startsWith('..')) {
        found.push(`${where}: leaves the repository`)
        continue
      }
      if (!existsSync(join(REPO_ROOT, target))) {
        found.push(`${where}: no such file`)
        continue
      }
      if (anchor === undefined || anchor === '') continue
      if (!target.endsWith('.md') || statSync(join(REPO_ROOT, target)).isDirectory()) {
        found.push(`${where}: an anchor into something that is not markdown`)
        continue
      }
      if (!headingAnchors(target).has(anchor)) found.push(`${where}: ${target} has no heading with that anchor`)
    }
  }
  return found
}

describe('links between README.md and docs/', () => {
  it('resolves every relative link to a file of the repository, and every #anchor to a heading', () => {
    assert.deepEqual(problems(), [])
  })

  it('links the README to every guide directly under docs/ (pages in subfolders hang off their guide)', () => {
    const fromReadme = new Set(relativeLinks('README.md').map(l => normalize(l.target.split('#')[0] ?? '')))
    const guides = markdownFiles().filter(f => /^docs\/[^/]+\.md$/.test(f))
    assert.deepEqual(guides.filter(f => !fromReadme.has(f)), [])
  })

  it('computes anchors the way GitHub does', () => {
    const anchors = headingAnchors('docs/faults.md')
    assert.ok(anchors.has('faults-what-a-client-sees'), [...anchors].join(', '))
  })
})
