import { createHash } from 'node:crypto'
import { watch, type FSWatcher } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'

const SETTLE_MS = 250

async function digestOf (file: string): Promise<string | undefined> {
  try {
    return createHash('sha256').update(await readFile(file)).digest('hex')
  } catch {
    return undefined
  }
}

/**
 * Calls `changed` when the file's content changes. Watches the directory, not the file: editors
 * save by renaming a new file over the old one, and a Kubernetes ConfigMap volume swaps a symlink,
 * both of which end a watch on the file itself. Events settle for a moment, and a save that leaves
 * the content as it was (or a file that is gone) triggers nothing.
 */
export async function watchConfig (file: string, changed: () => void, onError: (err: Error) => void): Promise<() => void> {
  let last = await digestOf(file)
  let timer: NodeJS.Timeout | undefined
  const check = async (): Promise<void> => {
    const now = await digestOf(file)
    if (now === undefined || now === last) return
    last = now
    changed()
  }
  const watcher: FSWatcher = watch(path.dirname(path.resolve(file)), () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = setTimeout(() => { void check() }, SETTLE_MS)
  })
  watcher.on('error', onError)
  return () => {
    if (timer !== undefined) clearTimeout(timer)
    watcher.close()
  }
}
