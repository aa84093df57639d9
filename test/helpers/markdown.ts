import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

// Reads README.md and docs/**/*.md as data for the docs checks (links, config blocks, CLI examples).

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface FencedBlock {
  /** Repository-relative path of the markdown file. */
  file: string
  /** 1-based line of the opening fence. */
  line: number
  /** Everything after the backticks: the language and any marker words (`yaml config`, `sh run`). */
  info: string
  text: string
}

export interface MarkdownLink { file: string, line: number, target: string }

/** README.md and every markdown file under docs/, repository-relative, sorted. */
export function markdownFiles (): string[] {
  const docs = readdirSync(join(REPO_ROOT, 'docs'), { recursive: true, withFileTypes: true })
    .filter(e => e.isFile() && e.name.endsWith('.md'))
    .map(e => relative(REPO_ROOT, join(e.parentPath, e.name)))
  return ['README.md', ...docs.sort()]
}

export function readRepoText (file: string): string {
  return readFileSync(join(REPO_ROOT, file), 'utf8')
}

/** Splits a file into its fenced code blocks and the lines outside them (blank where a block was). */
function scan (file: string): { blocks: FencedBlock[], prose: string[] } {
  const lines = readRepoText(file).split('\n')
  const blocks: FencedBlock[] = []
  const prose: string[] = []
  let open: { fence: string, line: number, info: string, body: string[] } | undefined
  lines.forEach((raw, i) => {
    const trimmed = raw.trimStart()
    if (open === undefined) {
      const m = /^(`{3,}|~{3,})(.*)$/.exec(trimmed)
      if (m !== null) {
        open = { fence: m[1] ?? '```', line: i + 1, info: (m[2] ?? '').trim(), body: [] }
        prose.push('')
        return
      }
      prose.push(raw)
      return
    }
    prose.push('')
    if (trimmed.startsWith(open.fence) && trimmed.slice(open.fence.length).trim() === '') {
      blocks.push({ file, line: open.line, info: open.info, text: open.body.join('\n') + '\n' })
      open = undefined
      return
    }
    // Blocks inside list items are indented; the YAML and shell inside must not be.
    const indent = /^\s*/.exec(lines[open.line - 1] ?? '')?.[0].length ?? 0
    open.body.push(raw.slice(Math.min(indent, /^\s*/.exec(raw)?.[0].length ?? 0)))
  })
  return { blocks, prose }
}

export function fencedBlocks (file: string): FencedBlock[] {
  return scan(file).blocks
}

/** Relative link targets (no scheme, no leading /) in the prose of a file, code spans excluded. */
export function relativeLinks (file: string): MarkdownLink[] {
  const links: MarkdownLink[] = []
  scan(file).prose.forEach((line, i) => {
    const text = line.replace(/`[^`]*`/g, '')
    for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] ?? ''
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('/')) continue
      links.push({ file, line: i + 1, target })
    }
  })
  return links
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingAnchors (file: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of scan(file).prose) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (m === null) continue
    const text = (m[1] ?? '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}
