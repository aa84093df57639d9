import { describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { consoleAssets, listConsoleAssets, packageRoot } from '../../../src/http/console-assets.ts'

function tempDir (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-console-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

describe('the console\'s file allowlist', () => {
  it('lists html, js, css, svg and png files by their /-separated path; dot files, other types and symlinks are left out', (t) => {
    const dir = tempDir(t)
    mkdirSync(join(dir, 'pages', 'deep'), { recursive: true })
    for (const name of ['index.html', 'app.js', 'style.css', 'logo.svg', 'icon.PNG', 'pages/deep/overview.js', 'notes.md', 'app.ts', '.env.js', 'secret.json']) writeFileSync(join(dir, name), 'x')
    symlinkSync('/etc/passwd', join(dir, 'passwd.css'))
    const assets = listConsoleAssets(dir)
    assert.deepEqual([...assets.keys()].sort(), ['app.js', 'icon.PNG', 'index.html', 'logo.svg', 'pages/deep/overview.js', 'style.css'])
    assert.equal(assets.get('app.js')?.contentType, 'text/javascript; charset=utf-8')
    assert.equal(assets.get('icon.PNG')?.contentType, 'image/png')
    assert.equal(assets.get('pages/deep/overview.js')?.file, join(dir, 'pages', 'deep', 'overview.js'))
  })

  it('a missing directory is an empty allowlist', (t) => {
    assert.equal(listConsoleAssets(join(tempDir(t), 'nothing')).size, 0)
  })

  it('finds the package root from src/ and from a dist/ path alike', (t) => {
    const root = tempDir(t)
    writeFileSync(join(root, 'package.json'), '{}')
    mkdirSync(join(root, 'dist', 'src', 'http'), { recursive: true })
    assert.equal(packageRoot(join(root, 'dist', 'src', 'http', 'console-assets.js')), root)
    assert.equal(packageRoot(join(root, 'src', 'http', 'console-assets.ts')), root)
    const here = packageRoot()
    const { assets, vendor } = consoleAssets(here)
    assert.ok(assets.has('index.html'))
    assert.equal(vendor.file, join(here, 'node_modules', 'htm', 'preact', 'standalone.module.js'))
  })
})
