import { describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pino from 'pino'
import { parseConfig } from '../../../src/config/load-config.ts'
import type { ReloadRegistration } from '../../../src/config/reload-registration.ts'
import type { GatewayConfig } from '../../../src/config/schema.ts'
import { createMetrics } from '../../../src/observability/metrics.ts'
import { createReloader } from '../../../src/ops/reloader.ts'

const RUNNING = parseConfig('logLevel: info\nhttp: { keepAliveMs: 15000 }\nupstreams: []', {})

async function configFile (t: TestContext, text: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'switchboard-reloader-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'gateway.yaml')
  await writeFile(file, text)
  return file
}

async function metricValue (metrics: ReturnType<typeof createMetrics>, name: string, outcome?: string): Promise<number | undefined> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find(m => m.name === name)
  return metric?.values.find(v => outcome === undefined || v.labels.outcome === outcome)?.value
}

function reloaderOver (file: string, registrations: ReloadRegistration[], metrics = createMetrics()): ReturnType<typeof createReloader> {
  return createReloader({ file, env: {}, current: () => RUNNING, registrations, metrics, log: pino({ level: 'silent' }) })
}

describe('the reloader walks the registrations', () => {
  it('applies the effective config to the touched registrations and answers with the diff', async (t) => {
    const file = await configFile(t, 'logLevel: debug\nhttp: { keepAliveMs: 5000 }\nupstreams: []')
    const applied: Array<[string, GatewayConfig]> = []
    const reload = reloaderOver(file, [
      { section: '*', apply: (next) => { applied.push(['*', next]) } },
      { section: 'logLevel', apply: (next) => { applied.push(['logLevel', next]) } },
      { section: 'rateLimits', apply: (next) => { applied.push(['rateLimits', next]) } }
    ])
    const result = await reload('test')
    assert.equal(result.outcome, 'ok')
    assert.deepEqual(applied.map(([section]) => section), ['*', 'logLevel'])
    const next = applied[0]?.[1]
    assert.equal(next?.logLevel, 'debug')
    assert.equal(next?.http.keepAliveMs, 15000, 'what only a restart applies keeps its running value')
  })

  it('a dry run (preview) answers the diff and applies, counts and marks nothing', async (t) => {
    const file = await configFile(t, 'logLevel: debug\nhttp: { keepAliveMs: 5000 }\nupstreams: []')
    const metrics = createMetrics()
    let ran = 0
    const reload = reloaderOver(file, [{ section: '*', apply: () => { ran++ } }], metrics)
    const result = await reload('admin', { dryRun: true })
    assert.equal(result.outcome, 'ok')
    assert.deepEqual(result.outcome === 'ok' ? result.diff.applied : undefined, ['logLevel'])
    assert.ok(result.outcome === 'ok' && result.diff.restartRequired.includes('http'), 'what a restart would take is named')
    assert.equal(ran, 0)
    assert.equal(await metricValue(metrics, 'switchboard_config_reloads_total', 'ok'), 0)
    await writeFile(file, 'logLevel: loud\nupstreams: []')
    const invalid = await reload('admin', { dryRun: true })
    assert.equal(invalid.outcome, 'invalid')
    assert.equal(await metricValue(metrics, 'switchboard_config_reloads_total', 'invalid'), 0, 'a refused preview is not a refused reload')
    assert.equal(await metricValue(metrics, 'switchboard_config_last_reload_successful'), 1)
  })

  it('an invalid file runs no registration', async (t) => {
    const file = await configFile(t, 'logLevel: loud\nupstreams: []')
    let ran = 0
    const result = await reloaderOver(file, [{ section: '*', apply: () => { ran++ } }])('test')
    assert.equal(result.outcome, 'invalid')
    assert.equal(ran, 0)
  })

  it('a registration that throws ends the reload as an error: what ran before it stays, what follows does not run', async (t) => {
    const file = await configFile(t, 'logLevel: debug\nupstreams: []')
    const metrics = createMetrics()
    const ran: string[] = []
    const result = await reloaderOver(file, [
      { section: '*', apply: () => { ran.push('config') } },
      { section: 'logLevel', apply: () => { throw new Error('the log level could not be set') } },
      { section: '*', apply: () => { ran.push('sessions') } }
    ], metrics)('admin')
    assert.deepEqual(result, { outcome: 'error', errors: [{ path: '(file)', message: 'the log level could not be set' }] })
    assert.deepEqual(ran, ['config'])
    assert.equal(await metricValue(metrics, 'switchboard_config_reloads_total', 'error'), 1)
    assert.equal(await metricValue(metrics, 'switchboard_config_reloads_total', 'ok'), 0)
    assert.equal(await metricValue(metrics, 'switchboard_config_last_reload_successful'), 0)
  })
})
