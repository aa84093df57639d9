import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { requiredBinary } from './binary-or-skip.ts'

/** Debian's chromium: the browser the console's end-to-end tests drive (never a downloaded one). */
export const CHROMIUM = '/usr/bin/chromium'

const binary = requiredBinary(CHROMIUM, '--version', 'the operator console is NOT tested in a real browser', 'apt-get install chromium')

export const hasChromium = binary.installed

/** False, and the test skipped loudly, when {@link CHROMIUM} is missing here; under CI=true the test fails instead. */
export const chromiumOrSkip = binary.orSkip

// Headless, and quiet on the network: no background, update, sync or QUIC traffic of its own, so
// every request the test sees is one the page made.
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions']

export interface Browser { context: BrowserContext, page: Page }

/** A headless chromium with a fresh profile and one page at 1280×800; closed (profile removed) when the test ends. */
export async function launchChromium (t: TestContext): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), 'switchboard-chromium-'))
  let context: BrowserContext
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 1280, height: 800 },
      colorScheme: 'light',
      timeout: 30_000
    })
  } catch (err) {
    await rm(profile, { recursive: true, force: true })
    throw err
  }
  t.after(async () => {
    await context.close().catch(() => {})
    await rm(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
  })
  const page = context.pages()[0] ?? await context.newPage()
  page.setDefaultTimeout(15_000)
  return { context, page }
}
