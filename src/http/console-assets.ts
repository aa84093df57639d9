import { existsSync, readdirSync } from 'node:fs'
import { dirname, extname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

// The console's static files: an allowlist read once at start, so a request path is only ever a key
// into it (never joined onto a directory: no traversal, whatever the encoding).

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png'
}

export interface ConsoleAsset { file: string, contentType: string }

/** The package root: the first directory above this module with a package.json (works from src/ and dist/). */
export function packageRoot (from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from)
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no package.json above ${from}`)
    dir = parent
  }
}

/** Every servable file under `dir` by its path relative to it ('/'-separated); dot files and other types left out. */
export function listConsoleAssets (dir: string): Map<string, ConsoleAsset> {
  const assets = new Map<string, ConsoleAsset>()
  if (!existsSync(dir)) return assets
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue
      const path = join(at, entry.name)
      if (entry.isDirectory()) {
        walk(path)
        continue
      }
      if (!entry.isFile()) continue
      const contentType = CONTENT_TYPES[extname(entry.name).toLowerCase()]
      if (contentType === undefined) continue
      assets.set(relative(dir, path).split(sep).join('/'), { file: path, contentType })
    }
  }
  walk(dir)
  return assets
}

/** The console's files and the vendored Preact + htm module, as found under the package root. */
export function consoleAssets (root: string = packageRoot()): { assets: Map<string, ConsoleAsset>, vendor: ConsoleAsset } {
  return {
    assets: listConsoleAssets(join(root, 'src', 'console')),
    vendor: { file: join(root, 'node_modules', 'htm', 'preact', 'standalone.module.js'), contentType: CONTENT_TYPES['.js'] as string }
  }
}
