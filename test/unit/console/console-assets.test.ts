import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { gzipSync } from 'node:zlib'
import { REPO_ROOT } from '../../helpers/spawn-fixture.ts'

const CONSOLE_DIR = join(REPO_ROOT, 'src', 'console')
const VENDOR = join(REPO_ROOT, 'node_modules', 'htm', 'preact', 'standalone.module.js')
/** The budget for what the browser downloads, compressed. */
const BUDGET_GZIP_BYTES = 150 * 1024

function files (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e => e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)])
}

const shipped = files(CONSOLE_DIR).filter(f => /\.(js|css|html|svg)$/.test(f))
const modules = shipped.filter(f => f.endsWith('.js'))

test('the console ships under 150 KB gzipped, Preact and htm included', () => {
  const sizes = [...shipped, VENDOR].map(file => ({ file: relative(REPO_ROOT, file), gzip: gzipSync(readFileSync(file), { level: 9 }).length }))
  const total = sizes.reduce((sum, s) => sum + s.gzip, 0)
  assert.ok(modules.length > 5 && sizes.some(s => s.file.endsWith('style.css')), 'the console files were found')
  assert.ok(total < BUDGET_GZIP_BYTES, `${total} bytes gzipped: ${JSON.stringify(sizes)}`)
})

test('index.html loads its script and style from files (nothing inline the CSP would block)', () => {
  const page = readFileSync(join(CONSOLE_DIR, 'index.html'), 'utf8')
  assert.match(page, /<script type="module" src="\/console\/app\.js"><\/script>/)
  assert.doesNotMatch(page, /<script(?![^>]*\ssrc=)[^>]*>/, 'no inline script')
  assert.doesNotMatch(page, /<style|\sstyle=|\son[a-z]+=/i, 'no inline style or handler attribute')
  assert.doesNotMatch(page, /https?:\/\//, 'no other origin')
})

test('the console modules import only each other and the vendored Preact + htm, and set no style attribute', () => {
  for (const file of modules) {
    const text = readFileSync(file, 'utf8')
    for (const [, spec] of text.matchAll(/^import [^'"]*['"]([^'"]+)['"]/gm)) {
      assert.ok(spec !== undefined && (spec.startsWith('./') || spec === '/console/vendor/htm-preact.js'), `${relative(REPO_ROOT, file)} imports ${spec}`)
    }
    assert.doesNotMatch(text, /\sstyle=/, `${relative(REPO_ROOT, file)}: style attributes are refused by the CSP (style-src 'self')`)
    assert.doesNotMatch(text, /https?:\/\/(?!www\.w3\.org)/, `${relative(REPO_ROOT, file)} names another origin`)
  }
})

interface DiffRow { kind: string, left: string | null, right: string | null, leftNo: number | null, rightNo: number | null }

test('the Trust page\'s line diff pairs a changed line with its new self and keeps unchanged lines aligned', async () => {
  const { diffLines } = await import(pathToFileURL(join(CONSOLE_DIR, 'line-diff.js')).href) as { diffLines: (a: string, b: string) => DiffRow[] }
  const rows = diffLines('a\nb\nc\nd', 'a\nB\nc\nd\ne')
  assert.deepEqual(rows.map(r => r.kind), ['same', 'mod', 'same', 'same', 'add'])
  assert.deepEqual(rows[1], { kind: 'mod', left: 'b', right: 'B', leftNo: 2, rightNo: 2 })
  assert.deepEqual(rows[4], { kind: 'add', left: null, right: 'e', leftNo: null, rightNo: 5 })
  assert.deepEqual(diffLines('x\ny', 'y').map(r => [r.kind, r.left, r.right]), [['del', 'x', null], ['same', 'y', 'y']])
  assert.ok(diffLines('same', 'same').every(r => r.kind === 'same'))
})
