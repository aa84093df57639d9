import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join, normalize } from 'node:path'
import { REPO_ROOT, readRepoText } from '../../helpers/markdown.ts'

// docs/protocol.md's support matrix names, for every method and notification, the tests that prove
// it. This keeps that claim checkable: each linked file exists and exercises the method (names it,
// or calls the SDK client's helper that sends it).

interface Row { method: string, tests: string[] }

function matrixRows (): Row[] {
  const text = readRepoText('docs/protocol.md')
  const section = text.split('\n## Support matrix\n')[1]?.split('\n## ')[0] ?? ''
  return section.split('\n').filter(l => l.startsWith('| `')).map(line => ({
    method: /^\| `([^`]+)`/.exec(line)?.[1] ?? '',
    tests: [...line.matchAll(/\]\(\.\.\/(test\/[^)]+)\)/g)].map(m => normalize(m[1] ?? ''))
  }))
}

/** The SDK client's helpers for methods a test may call only through them. */
const SDK_HELPERS: Readonly<Record<string, string>> = {
  'resources/unsubscribe': 'unsubscribeResource',
  ping: '.ping()'
}

/** The strings a test may name the method by: itself, without `notifications/`, or the SDK helper that sends it. */
function spellings (method: string): string[] {
  const helper = SDK_HELPERS[method]
  return [method, method.replace(/^notifications\//, ''), ...helper === undefined ? [] : [helper]]
}

describe('the protocol support matrix (docs/protocol.md)', () => {
  const rows = matrixRows()

  it('lists the methods and notifications of both revisions', () => {
    const methods = new Set(rows.map(r => r.method))
    for (const method of ['initialize', 'tools/call', 'resources/subscribe', 'server/discover', 'subscriptions/listen', 'tasks/update',
      'sampling/createMessage', 'elicitation/create', 'roots/list', 'notifications/cancelled', 'notifications/resources/updated']) {
      assert.ok(methods.has(method), `${method} is missing from the matrix`)
    }
  })

  it('names, for every row, at least one test file that exists and exercises the method', () => {
    const problems: string[] = []
    for (const row of rows) {
      if (row.tests.length === 0) problems.push(`${row.method}: no test named`)
      for (const file of row.tests) {
        if (!existsSync(join(REPO_ROOT, file))) {
          problems.push(`${row.method}: ${file} does not exist`)
          continue
        }
        const text = readRepoText(file)
        if (!spellings(row.method).some(s => text.includes(s))) problems.push(`${row.method}: ${file} never names it`)
      }
    }
    assert.deepEqual(problems, [])
  })
})
