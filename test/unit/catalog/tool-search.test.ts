import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ToolIndex, stem, tokenize } from '../../../src/catalog/tool-search.ts'

test('names split at underscores, dashes, dots, double separators and camelCase humps, lower-cased', () => {
  assert.deepEqual(tokenize('files__read_file'), ['file', 'read', 'file'])
  assert.deepEqual(tokenize('get-tiny-image'), ['get', 'tiny', 'imag'])
  assert.deepEqual(tokenize('github.createPullRequest'), ['github', 'creat', 'pull', 'request'])
  assert.deepEqual(tokenize('parseHTTPHeaders'), ['pars', 'http', 'header'])
  assert.deepEqual(tokenize('Echoes back the input'), ['echo', 'back', 'input'])
})

test('inflections of one word share a stem; stopwords are dropped', () => {
  for (const [a, b] of [['entities', 'entity'], ['deleting', 'delete'], ['deleted', 'delete'], ['relations', 'relate'], ['logging', 'log'], ['toggles', 'toggle'], ['compression', 'compress'], ['numbers', 'number']]) {
    assert.equal(stem(a as string), stem(b as string), `${a} ~ ${b}`)
  }
  assert.notEqual(stem('read'), stem('ready'))
  assert.deepEqual(tokenize('a tool to use for the graph'), ['graph'])
})

const DOCS = [
  { name: 'files__read_file', text: 'Read the complete contents of a file from the file system.' },
  { name: 'files__write_file', text: 'Create a new file or overwrite an existing file with new content.' },
  { name: 'files__list_directory', text: 'List the files and directories in a path.' },
  { name: 'git__commit', text: 'Record changes to the repository.' },
  { name: 'git__log', text: 'Show the commit logs, newest first.' },
  { name: 'search__web', text: 'Search the web and return result snippets.' }
]

test('ranks by name first, then description, best first', () => {
  const index = new ToolIndex(DOCS)
  const names = (query: string, limit = 3): string[] => index.search(query, { limit }).map(h => DOCS[h.index]?.name ?? '')
  assert.equal(names('read a file')[0], 'files__read_file')
  assert.equal(names('write file')[0], 'files__write_file')
  assert.deepEqual(names('commit', 2), ['git__commit', 'git__log'], 'a name match beats a description match')
  assert.equal(names('directories')[0], 'files__list_directory')
  const hits = index.search('file', { limit: 10 })
  for (let i = 1; i < hits.length; i++) assert.ok((hits[i - 1]?.score ?? 0) >= (hits[i]?.score ?? 0))
})

test('limit, accept and no-match behave as a caller needs', () => {
  const index = new ToolIndex(DOCS)
  assert.equal(index.search('file', { limit: 1 }).length, 1)
  assert.deepEqual(index.search('file', { limit: 0 }), [])
  assert.deepEqual(index.search('kubernetes', { limit: 5 }), [])
  assert.deepEqual(index.search('the of a', { limit: 5 }), [], 'a query of stopwords matches nothing')
  const accepted = index.search('file', { limit: 10, accept: i => i !== 0 }).map(h => h.index)
  assert.ok(accepted.length > 0 && !accepted.includes(0), 'a document the caller may not see is never returned')
  assert.deepEqual(new ToolIndex([]).search('file', { limit: 3 }), [])
})

test('equal scores keep catalog order, so results are stable', () => {
  const twins = new ToolIndex([{ name: 'y__ping', text: 'Ping.' }, { name: 'x__ping', text: 'Ping.' }])
  assert.deepEqual(twins.search('ping', { limit: 2 }).map(h => h.index), [0, 1])
})

test('a search over 10,000 tools only ranks the documents its words match', () => {
  const docs = Array.from({ length: 10_000 }, (_, i) => ({ name: `many__tool_${String(i).padStart(5, '0')}`, text: `Synthetic tool ${i}: echoes its message back.` }))
  const index = new ToolIndex(docs)
  let asked = 0
  const hits = index.search('tool 4242', { limit: 5, accept: () => { asked++; return true } })
  assert.equal(docs[hits[0]?.index ?? -1]?.name, 'many__tool_04242')
  assert.equal(asked, 1, 'only the one matching document was offered to accept')
  assert.equal(index.search('echo message', { limit: 7 }).length, 7)
})
