// `npm run conformance -- --auth`: the official suite's client authorization scenarios with the
// gateway as the OAuth client (conformance/auth-client.ts is the client command each one runs). The
// `auth` suite at 2025-11-25 and again at 2026-07-28 (each scenario belongs to both and emits
// different checks on each wire), then the scenarios only 2026-07-28 has and the client-credentials
// extension the gateway implements, one by one. See conformance/README.md.
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync } from 'node:fs'
import { mkdir, readFile, readdir } from 'node:fs/promises'
import path from 'node:path'

type Status = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'
interface Check { id: string, status: Status, description?: string, errorMessage?: string }
interface Played { scenario: string, version: string, checks: Check[] }

const SUITE_VERSIONS = ['2025-11-25', '2026-07-28'] as const
/** Client scenarios of 2026-07-28 outside the `auth` suite, run one by one at that revision. */
const ONLY_2026 = [
  'auth/resource-mismatch', 'auth/offline-access-scope', 'auth/offline-access-not-supported', 'auth/authorization-server-migration',
  'auth/iss-supported', 'auth/iss-not-advertised', 'auth/iss-supported-missing', 'auth/iss-wrong-issuer', 'auth/iss-unexpected',
  'auth/iss-normalized', 'auth/metadata-issuer-mismatch'
]
/** Extension scenarios the gateway plays (auth type client_credentials with a client secret). */
const EXTENSIONS = ['auth/client-credentials-basic']
/** Listed, not played, with the reason (also in conformance/README.md). */
export const NOT_PLAYED: ReadonlyArray<readonly [string, string]> = [
  ['auth/client-credentials-jwt', 'extension: private_key_jwt client authentication (SEP-1046); the gateway\'s client_credentials authenticates with a client secret'],
  ['auth/enterprise-managed-authorization', 'extension: ID-JAG token exchange (enterprise-managed authorization); not implemented'],
  ['auth/dpop', 'extension: DPoP-bound tokens (RFC 9449); the gateway sends bearer tokens'],
  ['auth/dpop-nonce', 'extension: DPoP nonces (RFC 9449); the gateway sends bearer tokens'],
  ['auth/wif-jwt-bearer', 'extension: workload identity federation (JWT bearer grant, RFC 7523); not implemented'],
  ['auth/2025-03-26-oauth-metadata-backcompat', 'the 2025-03-26 revision only (no protected-resource metadata); the gateway follows 2025-11-25 discovery'],
  ['auth/2025-03-26-oauth-endpoint-fallback', 'the 2025-03-26 revision only (no metadata at all, endpoints guessed at the server root); the gateway needs RFC 8414 or OpenID metadata']
]

const RUN_TIMEOUT_MS = 10 * 60_000
/** Per scenario, for the CLI's --timeout: above the driver's own deadline, so the driver stops its gateway. */
const SCENARIO_TIMEOUT_MS = 90_000

export interface AuthRunOptions {
  root: string
  dir: string
  node22: string
  cli: string
  /** One scenario only (with --revision: at that revision). */
  scenario?: string | undefined
  revision?: string | undefined
  onChild: (child: ChildProcess | undefined) => void
}

async function runCli (options: AuthRunOptions, args: string[], logName: string): Promise<number | null> {
  const driver = `${process.execPath} --import tsx ${path.join(options.root, 'conformance', 'auth-client.ts')}`
  // The CLI splits the command on spaces and runs it in a shell, with our cwd: the repository, so
  // that `--import tsx` resolves to its tsx.
  const child = spawn(options.node22, [options.cli, 'client', '--command', driver, '--timeout', String(SCENARIO_TIMEOUT_MS), ...args], {
    cwd: options.root, stdio: ['ignore', 'pipe', 'pipe']
  })
  options.onChild(child)
  const log = createWriteStream(path.join(options.dir, logName))
  child.stdout.pipe(log, { end: false })
  child.stderr.pipe(log, { end: false })
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS)
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  clearTimeout(timer)
  options.onChild(undefined)
  log.end()
  return code
}

/** <results>/auth/<name>-<ISO timestamp with : and . as ->/checks.json, for every scenario run. */
async function readResults (resultsDir: string, version: string): Promise<Played[]> {
  const played: Played[] = []
  const walk = async (dir: string): Promise<void> => {
    if (!existsSync(dir)) return
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue
      const full = path.join(dir, entry.name)
      const file = path.join(full, 'checks.json')
      if (existsSync(file)) {
        const scenario = path.relative(resultsDir, full).replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '')
        played.push({ scenario, version, checks: JSON.parse(await readFile(file, 'utf8')) as Check[] })
      } else {
        await walk(full)
      }
    }
  }
  await walk(resultsDir)
  return played
}

async function play (options: AuthRunOptions, version: string, selection: string[], label: string): Promise<Played[]> {
  const results = path.join(options.dir, `results-${label}`)
  await mkdir(results, { recursive: true })
  await runCli(options, [...selection, '--output-dir', results], `conformance-${label}.log`)
  return await readResults(results, version)
}

function report (played: Played[]): number {
  const count = (checks: Check[], status: Status): number => checks.filter((c) => c.status === status).length
  const width = Math.max(8, ...played.map((p) => p.scenario.length))
  const lines = [`${'scenario'.padEnd(width)}  revision    passed  failed  warnings`]
  for (const p of played) {
    const f = count(p.checks, 'FAILURE')
    const w = count(p.checks, 'WARNING')
    const verdict = f > 0 ? '  FAIL' : w > 0 ? '  WARN' : ''
    lines.push(`${p.scenario.padEnd(width)}  ${p.version}  ${String(count(p.checks, 'SUCCESS')).padStart(6)}  ${String(f).padStart(6)}  ${String(w).padStart(8)}${verdict}`)
  }
  const failed = played.flatMap((p) => p.checks.filter((c) => c.status === 'FAILURE').map((c) => ({ ...p, check: c })))
  const warned = played.flatMap((p) => p.checks.filter((c) => c.status === 'WARNING').map((c) => ({ ...p, check: c })))
  lines.push('', `total: ${played.length} scenario runs, ${failed.length} failed checks, ${warned.length} warnings`)
  for (const [title, list] of [['failures', failed], ['warnings', warned]] as const) {
    if (list.length === 0) continue
    lines.push('', `${title}:`)
    for (const { scenario, version, check } of list) lines.push(`  ${scenario} (${version}) [${check.id}] ${check.errorMessage ?? check.description ?? ''}`)
  }
  lines.push('', 'not played:')
  for (const [scenario, why] of NOT_PLAYED) lines.push(`  ${scenario}: ${why}`)
  process.stdout.write(lines.join('\n') + '\n')
  return failed.length
}

/** Runs the selection, prints one line per scenario and revision; 1 when a check failed or nothing ran. */
export async function runAuth (options: AuthRunOptions): Promise<number> {
  const played: Played[] = []
  if (options.scenario !== undefined) {
    const version = options.revision ?? '2025-11-25'
    const force = EXTENSIONS.includes(options.scenario) ? ['--force'] : []
    played.push(...await play(options, version, ['--scenario', options.scenario, '--spec-version', version, ...force], 'single'))
  } else {
    for (const version of SUITE_VERSIONS) {
      process.stdout.write(`auth suite at ${version}...\n`)
      played.push(...await play(options, version, ['--suite', 'auth', '--spec-version', version], `suite-${version}`))
    }
    const singles = [
      ...ONLY_2026.map((scenario) => [scenario, '2026-07-28'] as const),
      // Extensions sit outside the revision timeline: --force runs them on each wire.
      ...EXTENSIONS.flatMap((scenario) => SUITE_VERSIONS.map((version) => [scenario, version] as const))
    ]
    for (const [scenario, version] of singles) {
      process.stdout.write(`${scenario} at ${version}...\n`)
      const force = EXTENSIONS.includes(scenario) ? ['--force'] : []
      const label = `${scenario.replace(/\W+/g, '-')}-${version}`
      played.push(...await play(options, version, ['--scenario', scenario, '--spec-version', version, ...force], label))
    }
  }
  const failed = report(played)
  process.stdout.write(`\nlogs and results: ${options.dir}\n`)
  if (played.length === 0) {
    process.stderr.write('no scenario left results; see the conformance logs\n')
    return 1
  }
  return failed > 0 ? 1 : 0
}
