#!/usr/bin/env node
// The package's `bin`, so `npx switchboard …` works in a checkout right after `npm ci`. Plain JS:
// Node 20 cannot run the TypeScript entry point without a loader. Runs the build (dist/src/main.js)
// when it is at least as new as every source file, else the source through tsx (a runtime
// dependency), so an edit after `npm run build` never runs stale code. The image does not use
// this file: its entry point is `node dist/src/main.js`.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const SOURCE_DIR = fileURLToPath(new URL('.', import.meta.url))
const BUILT = new URL('../dist/src/main.js', import.meta.url)

function isBuildCurrent () {
  if (!existsSync(BUILT)) return false
  const builtAt = statSync(BUILT).mtimeMs
  return readdirSync(SOURCE_DIR, { recursive: true, withFileTypes: true })
    .every(entry => !entry.isFile() || !entry.name.endsWith('.ts') || statSync(`${entry.parentPath ?? entry.path}/${entry.name}`).mtimeMs <= builtAt)
}

if (isBuildCurrent()) {
  await import(BUILT.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('./main.ts')
}
