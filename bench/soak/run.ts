// npm run soak [-- --seconds N --sessions N --out FILE]
// Three gateway replicas behind HAProxy on one Redis, a stdio and a Streamable HTTP upstream, a mixed
// raw-HTTP load and faults on a schedule; prints the report and writes it as JSON. Exit code 1 when
// an answer crossed or a request went unanswered (the hard targets), 2 when the soak itself failed.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { runChaos, schedule, type Fault } from './chaos.ts'
import { Checker } from './checker.ts'
import { runLoad, UPSTREAMS } from './load.ts'
import { buildReport, formatReport } from './report.ts'
import { RssSampler } from './rss.ts'
import { Teardown } from './teardown.ts'
import { API_KEY, UPSTREAM_TIMEOUT_MS, startCluster } from './topology.ts'
import { Wire } from './wire.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const REPLICAS = 3
/** Above the upstreams' timeout: a request still without answer or error by then is "unanswered". */
const REQUEST_TIMEOUT_MS = UPSTREAM_TIMEOUT_MS + 5_000
/** The whole run, set-up and clean-up included, is cut after its seconds plus this. */
const WATCHDOG_SLACK_MS = 180_000

function log (line: string): void {
  process.stderr.write(`[soak] ${line}\n`)
}

function options (): { seconds: number, sessions: number, out: string, reinitAfterMs: number } {
  const { values } = parseArgs({
    strict: true,
    options: {
      seconds: { type: 'string', default: '300' },
      sessions: { type: 'string', default: '12' },
      out: { type: 'string', default: path.join(ROOT, 'bench', 'soak', 'last-run.json') },
      'reinit-after-ms': { type: 'string', default: '20000' }
    }
  })
  const int = (raw: string, flag: string, min: number, max: number): number => {
    const n = Number(raw)
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${flag} must be an integer from ${min} to ${max}`)
    return n
  }
  return {
    seconds: int(values.seconds, '--seconds', 10, 24 * 3600),
    sessions: int(values.sessions, '--sessions', 1, 200),
    out: path.resolve(values.out),
    reinitAfterMs: int(values['reinit-after-ms'], '--reinit-after-ms', 0, 600_000)
  }
}

function commit (): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', timeout: 5_000 }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8', timeout: 5_000 }).trim() !== ''
    return dirty ? `${sha}+changes` : sha
  } catch {
    return '?'
  }
}

async function main (): Promise<number> {
  const opts = options()
  // Debian installs haproxy in /usr/sbin, which a user's PATH may lack; the helpers spawn it by name.
  if (!(process.env.PATH ?? '').split(':').includes('/usr/sbin')) process.env.PATH = `${process.env.PATH ?? ''}:/usr/sbin`
  const teardown = new Teardown()
  let stopping = false
  const watchdog = setTimeout(() => {
    log(`the run exceeded ${opts.seconds} s + ${WATCHDOG_SLACK_MS / 1000} s: killing everything`)
    teardown.snapshot()
    teardown.killStrays()
    process.exit(2)
  }, opts.seconds * 1000 + WATCHDOG_SLACK_MS)
  watchdog.unref()
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) {
        teardown.snapshot()
        teardown.killStrays()
        process.exit(130)
      }
      stopping = true
      log(`${signal}: stopping the load, then everything the soak started (again to kill at once)`)
    })
  }

  let wire: Wire | undefined
  try {
    log(`starting redis-server, the HTTP upstream, ${REPLICAS} replicas and HAProxy`)
    const cluster = await startCluster(teardown, REPLICAS)
    log(`balancer ${cluster.balancer.url}; replicas ${cluster.replicas.map(r => `${r.name}=${r.pid}`).join(' ')}; faults at ${schedule(opts.seconds).map(f => `${f.atS.toFixed(0)} s ${f.kind}`).join(', ')}`)
    if (stopping) return 130
    wire = new Wire(`${cluster.balancer.url}/mcp`, opts.sessions * 3)
    const checker = new Checker()
    const runId = Math.random().toString(36).slice(2, 6).padEnd(4, '0')
    const rss = new RssSampler()
    const end = opts.seconds * 1000
    const over = (): boolean => stopping || checker.now() >= end
    const sampler = setInterval(() => {
      rss.sample(cluster.replicas, checker.now(), checker.requests)
      teardown.snapshot()
      if (checker.now() % 10_000 < 1_000) log(`${Math.round(checker.now() / 1000)} s: ${checker.requests} requests, ${checker.answered} answered, ${[...checker.ops.values()].reduce((n, s) => n + s.errors, 0)} errors, ${checker.crossedCount} crossed, ${checker.unansweredCount} unanswered`)
    }, 1_000)
    log(`load: ${opts.sessions} sessions for ${opts.seconds} s over upstreams ${UPSTREAMS.join(', ')}`)
    let faults: Fault[] = []
    await Promise.all([
      runLoad({ wire, checker, apiKey: API_KEY, runId, timeoutMs: REQUEST_TIMEOUT_MS, reinitAfterMs: opts.reinitAfterMs }, opts.sessions, over),
      runChaos(cluster, teardown, checker, opts.seconds, over, log).then(f => { faults = f })
    ])
    const loadMs = checker.now()
    clearInterval(sampler)
    const report = buildReport(checker, faults, rss.slopes(), {
      date: new Date().toISOString(),
      commit: commit(),
      seconds: opts.seconds,
      sessions: opts.sessions,
      replicas: REPLICAS,
      node: process.version,
      loadMs
    })
    process.stdout.write(formatReport(report) + '\n')
    writeFileSync(opts.out, JSON.stringify(report, null, 2) + '\n')
    log(`report written to ${opts.out}`)
    if (stopping) return 130
    return report.hard === 'PASS' ? 0 : 1
  } finally {
    log('stopping everything the soak started')
    await wire?.close()
    await teardown.run()
  }
}

main().then(code => {
  process.exitCode = code
  // Nothing the soak started is left; undici keep-alive timers must not hold the exit.
  setTimeout(() => process.exit(code), 500).unref()
}, (err: unknown) => {
  log(`the soak failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`)
  process.exitCode = 2
  setTimeout(() => process.exit(2), 500).unref()
})
