// `npm run conformance -- --auth`: the official suite's client authorization scenarios with the
// gateway as the OAuth client (conformance/auth-client.ts is the client command each one runs):
// every auth/* client scenario the CLI lists for 2025-11-25 and again for 2026-07-28 (a scenario of
// both emits different checks on each wire), and the client-credentials extension on both, each
// scenario its own CLI run, two at a time. See conformance/README.md.
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync } from 'node:fs'
import { mkdir, readFile, readdir } from 'node:fs/promises'
import path from 'node:path'

type Status = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'
interface Check { id: string, status: Status, description?: string, errorMessage?: string }
interface Played { scenario: string, version: string, checks: Check[] }

const SUITE_VERSIONS = ['2025-11-25', '2026-07-28'] as const
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

/**
 * Played and reported, but their failures do not fail the run: gaps of the gateway, each with why.
 * (Kept short on purpose: a scenario leaves this list when the gateway closes the gap.)
 */
export const KNOWN_GAPS: ReadonlyMap<string, string> = new Map([
  ['auth/authorization-server-migration', 'SEP-2352: when the upstream\'s metadata names a new authorization server, the gateway keeps its cached discovery (an hour) and client; it does not yet rediscover and register again after a 401 that a refresh cannot mend']
])
/**
 * Scenarios run at once. The suite's own `--suite auth` starts all of them together, each with its
 * gateway: on a small machine (CI has 2 cores) their OAuth and MCP requests then time out.
 */
const CONCURRENCY = 2
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
}

const running = new Set<ChildProcess>()

/** Kills the CLI runs under way (an interrupt); their drivers stop their gateways on their own deadline. */
export function stopAuthRuns (): void {
  for (const child of running) child.kill('SIGTERM')
}

async function runCli (options: AuthRunOptions, args: string[], logName: string): Promise<number | null> {
  const driver = `${process.execPath} --import tsx ${path.join(options.root, 'conformance', 'auth-client.ts')}`
  // The CLI splits the command on spaces and runs it in a shell, with our cwd: the repository, so
  // that `--import tsx` resolves to its tsx.
  const child = spawn(options.node22, [options.cli, 'client', '--command', driver, '--timeout', String(SCENARIO_TIMEOUT_MS), ...args], {
    cwd: options.root, stdio: ['ignore', 'pipe', 'pipe']
  })
  running.add(child)
  const log = createWriteStream(path.join(options.dir, logName))
  child.stdout.pipe(log, { end: false })
  child.stderr.pipe(log, { end: false })
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS)
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  clearTimeout(timer)
  running.delete(child)
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

async function play (options: AuthRunOptions, scenario: string, version: string): Promise<Played[]> {
  const label = `${scenario.replace(/\W+/g, '-')}-${version}`
  const results = path.join(options.dir, `results-${label}`)
  await mkdir(results, { recursive: true })
  // Extensions sit outside the revision timeline: --force runs them on each wire.
  const force = EXTENSIONS.includes(scenario) ? ['--force'] : []
  await runCli(options, ['--scenario', scenario, '--spec-version', version, ...force, '--output-dir', results], `conformance-${label}.log`)
  return await readResults(results, version)
}

/** The client authorization scenarios of a revision, as the CLI lists them, minus those not played. */
async function scenariosAt (options: AuthRunOptions, version: string): Promise<string[]> {
  const child = spawn(options.node22, [options.cli, 'list', '--client', '--spec-version', version], { cwd: options.root, stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString('utf8') })
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  if (code !== 0) throw new Error(`conformance list --client --spec-version ${version} exited ${String(code)}`)
  const skipped = new Set(NOT_PLAYED.map(([name]) => name))
  return [...output.matchAll(/^\s+- (auth\/\S+) \[/gm)].map((m) => m[1] ?? '').filter((name) => name !== '' && !skipped.has(name))
}

/** Runs `jobs` CONCURRENCY at a time, in order of start. */
async function inPool<T> (jobs: Array<() => Promise<T[]>>): Promise<T[]> {
  const out: T[][] = new Array<T[]>(jobs.length)
  let next = 0
  const worker = async (): Promise<void> => {
    for (let i = next++; i < jobs.length; i = next++) out[i] = await (jobs[i] as () => Promise<T[]>)()
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, jobs.length) }, worker))
  return out.flat()
}

function report (played: Played[]): number {
  const count = (checks: Check[], status: Status): number => checks.filter((c) => c.status === status).length
  const width = Math.max(8, ...played.map((p) => p.scenario.length))
  const lines = [`${'scenario'.padEnd(width)}  revision    passed  failed  warnings`]
  for (const p of played) {
    const f = count(p.checks, 'FAILURE')
    const w = count(p.checks, 'WARNING')
    const verdict = f > 0 ? (KNOWN_GAPS.has(p.scenario) ? '  fail (known gap)' : '  FAIL') : w > 0 ? '  WARN' : ''
    lines.push(`${p.scenario.padEnd(width)}  ${p.version}  ${String(count(p.checks, 'SUCCESS')).padStart(6)}  ${String(f).padStart(6)}  ${String(w).padStart(8)}${verdict}`)
  }
  const failures = played.flatMap((p) => p.checks.filter((c) => c.status === 'FAILURE').map((c) => ({ ...p, check: c })))
  const failed = failures.filter((f) => !KNOWN_GAPS.has(f.scenario))
  const gaps = failures.filter((f) => KNOWN_GAPS.has(f.scenario))
  const warned = played.flatMap((p) => p.checks.filter((c) => c.status === 'WARNING').map((c) => ({ ...p, check: c })))
  lines.push('', `total: ${played.length} scenario runs, ${failed.length} failed checks, ${warned.length} warnings`)
  for (const [title, list] of [['failures', failed], ['known gaps (they do not fail the run)', gaps], ['warnings', warned]] as const) {
    if (list.length === 0) continue
    lines.push('', `${title}:`)
    for (const { scenario, version, check } of list) lines.push(`  ${scenario} (${version}) [${check.id}] ${check.errorMessage ?? check.description ?? ''}`)
  }
  for (const [scenario, why] of KNOWN_GAPS) lines.push(`  known gap ${scenario}: ${why}`)
  lines.push('', 'not played:')
  for (const [scenario, why] of NOT_PLAYED) lines.push(`  ${scenario}: ${why}`)
  process.stdout.write(lines.join('\n') + '\n')
  return failed.length
}

/** Runs the selection, prints one line per scenario and revision; 1 when a check failed or nothing ran. */
export async function runAuth (options: AuthRunOptions): Promise<number> {
  const runs: Array<readonly [string, string]> = []
  if (options.scenario !== undefined) {
    runs.push([options.scenario, options.revision ?? '2025-11-25'])
  } else {
    for (const version of SUITE_VERSIONS) runs.push(...(await scenariosAt(options, version)).map((scenario) => [scenario, version] as const))
    for (const scenario of EXTENSIONS) runs.push(...SUITE_VERSIONS.map((version) => [scenario, version] as const))
  }
  process.stdout.write(`${runs.length} scenario runs, ${CONCURRENCY} at a time\n`)
  const played = await inPool(runs.map(([scenario, version]) => async () => {
    const results = await play(options, scenario, version)
    process.stdout.write(`  ${scenario} (${version}) done\n`)
    return results
  }))
  const failed = report(played)
  process.stdout.write(`\nlogs and results: ${options.dir}\n`)
  if (played.length === 0) {
    process.stderr.write('no scenario left results; see the conformance logs\n')
    return 1
  }
  return failed > 0 ? 1 : 0
}
