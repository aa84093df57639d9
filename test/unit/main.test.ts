import { describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import { platform } from 'node:os'
import { createServer } from 'node:net'
import { runCli, tempConfig } from '../helpers/cli.ts'

/** Holds a loopback port for the rest of the test, the way another process would. */
async function occupiedPort (t: TestContext): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => { server.close() })
  return (server.address() as { port: number }).port
}

/** Why binding port 80 would not fail with EACCES here, if it would not (root, or a lowered sysctl). */
async function lowPortsUnprivileged (): Promise<string | undefined> {
  if (platform() !== 'linux') return 'only checked on Linux'
  if (process.getuid?.() === 0) return 'running as root'
  const start = Number((await readFile('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').catch(() => '1024')).trim())
  return start <= 80 ? `net.ipv4.ip_unprivileged_port_start is ${start}` : undefined
}

const TOKEN_ENV = { ADMIN_TOKEN: 'admin-token-0123456789abcdef' }

describe('switchboard (the process)', () => {
  it('prints the version alone on one line and exits 0', async () => {
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    for (const flag of ['--version', '-v']) {
      const result = await runCli([flag])
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stdout, `${pkg.version}\n`)
      assert.equal(result.stderr, '')
    }
  })

  it('prints the usage to stdout for --help (exit 0) and to stderr for an unknown command (exit 2)', async () => {
    const help = await runCli(['--help'])
    assert.equal(help.code, 0)
    assert.match(help.stdout, /^usage:\n/)
    assert.match(help.stdout, /switchboard --version/)
    const unknown = await runCli(['valdiate', '--config', 'x.yaml'])
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /^switchboard: unknown command valdiate\nusage:/)
  })

  it('answers a mistyped option with usage and exit 2, not a stack trace', async () => {
    const result = await runCli(['--verison'])
    assert.equal(result.code, 2)
    assert.match(result.stderr, /^switchboard: Unknown option '--verison'/)
    assert.match(result.stderr, /usage:/)
    assert.doesNotMatch(result.stderr, /\n\s+at /)
  })

  it('says in one line that the port is taken, and exits 1, when listen.port is in use', async (t) => {
    const port = await occupiedPort(t)
    const file = await tempConfig(t, `listen: { host: 127.0.0.1, port: ${port} }\n`)
    const result = await runCli(['--config', file])
    assert.equal(result.code, 1)
    assert.equal(result.stderr, `switchboard: cannot listen on 127.0.0.1:${port}: address already in use (another switchboard? set listen.port)\n`)
  })

  it('names admin.listen when the admin port is in use, and never opens the MCP listener (no /readyz answers meanwhile)', async (t) => {
    const port = await occupiedPort(t)
    const file = await tempConfig(t, `listen: { port: 0 }\nadmin:\n  listen: { port: ${port} }\n  token: "\${ADMIN_TOKEN}"\n`)
    const result = await runCli(['--config', file], TOKEN_ENV)
    assert.equal(result.code, 1)
    assert.equal(result.stderr, `switchboard: cannot listen on 127.0.0.1:${port}: address already in use (another switchboard? set admin.listen.port)\n`)
    assert.doesNotMatch(result.stdout, /switchboard listening/)
  })

  it('says in one line that a privileged port needs privileges', async (t) => {
    const skip = await lowPortsUnprivileged()
    if (skip !== undefined) {
      t.skip(`port 80 is not privileged here: ${skip} (describeListenError's unit test covers the message)`)
      return
    }
    const file = await tempConfig(t, 'listen: { port: 80 }\n')
    const result = await runCli(['--config', file])
    assert.equal(result.code, 1)
    assert.equal(result.stderr, 'switchboard: cannot listen on 127.0.0.1:80: permission denied (ports below 1024 need privileges; set listen.port)\n')
  })

  it('says in one line that no interface has the address when listen.host is not this machine\'s', async (t) => {
    // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never assigned to a real interface.
    const file = await tempConfig(t, 'listen: { host: 192.0.2.1, port: 0, allowUnauthenticated: true }\n')
    const result = await runCli(['--config', file])
    assert.equal(result.code, 1)
    assert.equal(result.stderr, 'switchboard: cannot listen on 192.0.2.1:0: address not available (no interface of this machine has 192.0.2.1; set listen.host)\n')
  })
})
