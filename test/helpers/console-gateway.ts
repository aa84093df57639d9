/* eslint-disable no-template-curly-in-string -- the config's own ${VAR} syntax */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { freePort } from './free-port.ts'
import { fixtureCommand } from './spawn-fixture.ts'
import { startGateway, waitReady, type RunningGateway } from './start-gateway.ts'

export const ADMIN_TOKEN = 'console-admin-token-0123456789'
export const ALICE_KEY = 'alice-console-key-0123456789'

export interface ConsoleGateway {
  gw: RunningGateway
  /** http://127.0.0.1:PORT of the admin listener, where the console is. */
  origin: string
  configFile: string
  /** While this file exists the `flaky` upstream exits as soon as it starts. */
  marker: string
  pinFile: string
  config: Record<string, unknown>
  /** Writes the config file (a reload reads it). */
  writeConfig: (config: Record<string, unknown>) => Promise<void>
  /** GET an admin route with the bearer token. */
  admin: <T>(path: string) => Promise<T>
}

export function stdioUpstream (name: string): Record<string, unknown> {
  return { name, transport: 'stdio', ...fixtureCommand(['--name', name]) }
}

/**
 * An upstream that stays down on demand: a shell that exits at once while `marker` exists and
 * otherwise execs the fixture (so the pid the gateway reports is the fixture's own).
 */
function flakyUpstream (name: string, marker: string): Record<string, unknown> {
  const fixture = fixtureCommand(['--name', name])
  return { name, transport: 'stdio', command: 'sh', args: ['-c', 'if [ -e "$0" ]; then exit 1; fi; exec "$@"', marker, fixture.command, ...fixture.args] }
}

/**
 * The gateway the console tests drive: two stdio upstreams (`alpha`, and `flaky` which can be kept
 * down), an API-key principal, pinning in quarantine mode, `alpha__counter` asking an operator, and
 * the admin listener with the console.
 */
export async function startConsoleGateway (t: TestContext): Promise<ConsoleGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-console-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }) })
  const marker = join(dir, 'flaky-down')
  const pinFile = join(dir, 'gateway.pins.json')
  const configFile = join(dir, 'gateway.yaml')
  const adminPort = await freePort()
  const config: Record<string, unknown> = {
    // Port 0 as the test listens, so a reload of this file sees no listen change.
    listen: { host: '127.0.0.1', port: 0 },
    upstreams: [stdioUpstream('alpha'), flakyUpstream('flaky', marker)],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}', roles: ['operator'] }] },
    catalog: { listChangedDebounceMs: 20 },
    pinning: { file: pinFile, mode: 'quarantine', reloadIntervalMs: 200 },
    // One tool waits for an operator, for the Approvals page.
    policies: { default: 'allow', rules: [{ tools: ['alpha__counter'], effect: 'ask', approval: { via: 'operator', timeoutMs: 120_000 } }] },
    admin: { listen: { host: '127.0.0.1', port: adminPort }, token: '${SWITCHBOARD_ADMIN_TOKEN}' }
  }
  const writeConfig = async (next: Record<string, unknown>): Promise<void> => { await writeFile(configFile, JSON.stringify(next, null, 2)) }
  await writeConfig(config)
  const env = { ...process.env, SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN, ALICE_KEY }
  const gw = await startGateway(t, JSON.stringify(config), env, configFile)
  if (gw.admin === undefined) throw new Error('the gateway built no admin listener')
  await gw.admin.listen({ host: '127.0.0.1', port: adminPort })
  await waitReady(gw)
  const origin = `http://127.0.0.1:${adminPort}`
  const admin = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`)
    return await res.json() as T
  }
  return { gw, origin, configFile, marker, pinFile, config, writeConfig, admin }
}
