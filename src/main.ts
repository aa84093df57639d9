#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { isSwitchboardError } from './errors.ts'
import type { ListenTarget } from './net/listen-error.ts'
import type { ExplainQuery, Verdict } from './policy/explain.ts'
import { VERSION } from './version.ts'

// Each command loads only what it needs: the gateway itself (app.ts) takes seconds to load, which a
// `validate`, an `explain` or a `--version` never pays for.
type Subcommand = (args: string[], env: NodeJS.ProcessEnv) => Promise<{ code: number, stdout: string, stderr: string }>
const SUBCOMMANDS = new Map<string, () => Promise<Subcommand>>([
  ['pins', async () => (await import('./trust/pins-command.ts')).pinsCommand],
  ['connections', async () => (await import('./ops/connections-command.ts')).connectionsCommand],
  ['client-config', async () => (await import('./ops/client-config-command.ts')).clientConfigCommand],
  ['search', async () => (await import('./ops/search-command.ts')).searchCommand],
  ['add', async () => (await import('./ops/add-command.ts')).addCommand]
])

/** The whole usage text, with each subcommand's own (loaded only to be shown). */
async function usage (): Promise<string> {
  const [{ PINS_USAGE }, { CONNECTIONS_USAGE }, { CLIENT_CONFIG_USAGE }, { SEARCH_USAGE }, { ADD_USAGE }] = await Promise.all([
    import('./trust/pins-command.ts'), import('./ops/connections-command.ts'), import('./ops/client-config-command.ts'),
    import('./ops/search-command.ts'), import('./ops/add-command.ts')
  ])
  return `usage:
  switchboard --version                  print the version
  switchboard --config <file> [--watch]  run the gateway; SIGHUP (or --watch: any change of the
                                         file) reloads the config without dropping sessions
  switchboard validate --config <file>   check a config and exit
  switchboard explain --config <file> --principal <id> [--role <name>]... (--tool <name> [--args '<json>'] | --prompt <name> | --resource <uri>)
                                         which policy rule lets the principal see and call it, and why; --args
                                         evaluates the rules' when conditions on a call's arguments (exit 0: allowed,
                                         3: denied, 4: no configured upstream exposes that name, 5: a call waits for approval)
${PINS_USAGE}
${CONNECTIONS_USAGE}
${CLIENT_CONFIG_USAGE}
${SEARCH_USAGE}
${ADD_USAGE}
exit status: 0 ok, 1 the config is invalid or the gateway cannot start, 2 usage error`
}

const COMMANDS = new Set(['run', 'validate', 'explain'])
const EXPLAIN_EXIT: Record<Verdict, number> = { allowed: 0, denied: 3, unknown: 4, ask: 5 }

function explainQuery (values: { principal?: string, role?: string[], tool?: string, prompt?: string, resource?: string, args?: string }): ExplainQuery | string {
  if (values.principal === undefined) return '--principal <id> is required'
  const targets = [['tools', values.tool], ['prompts', values.prompt], ['resources', values.resource]] as const
  const given = targets.filter(([, v]) => v !== undefined)
  const [target] = given
  if (given.length !== 1 || target === undefined) return 'exactly one of --tool, --prompt, --resource is required'
  const query: ExplainQuery = { principal: values.principal, roles: values.role, kind: target[0], name: target[1] as string }
  if (values.args === undefined) return query
  if (target[0] !== 'tools') return '--args goes with --tool'
  const args = parseArgsJson(values.args)
  return typeof args === 'string' ? args : { ...query, args }
}

/** --args: a tools/call's arguments, a JSON object. */
function parseArgsJson (text: string): Record<string, unknown> | string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err: unknown) {
    return `--args is not JSON: ${(err as Error).message}`
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : '--args must be a JSON object, e.g. \'{"path": "/srv/public/a.txt"}\''
}

async function main (argv: string[]): Promise<number> {
  const loadSubcommand = SUBCOMMANDS.get(argv[0] ?? '')
  if (loadSubcommand !== undefined) {
    const { code, stdout, stderr } = await (await loadSubcommand())(argv.slice(1), process.env)
    process.stdout.write(stdout)
    process.stderr.write(stderr)
    return code
  }
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        config: { type: 'string', short: 'c' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        watch: { type: 'boolean' },
        principal: { type: 'string' },
        role: { type: 'string', multiple: true },
        tool: { type: 'string' },
        prompt: { type: 'string' },
        resource: { type: 'string' },
        args: { type: 'string' }
      },
      allowPositionals: true
    })
  } catch (err: unknown) {
    // parseArgs throws TypeErrors for a mistyped option: a usage error, not a fault.
    process.stderr.write(`switchboard: ${(err as Error).message}\n` + await usage() + '\n')
    return 2
  }
  const { values, positionals } = parsed
  if (values.version === true) {
    process.stdout.write(`${VERSION}\n`)
    return 0
  }
  const command = positionals[0] ?? 'run'
  if (values.help === true) {
    process.stdout.write(await usage() + '\n')
    return 0
  }
  if (!COMMANDS.has(command)) {
    process.stderr.write(`switchboard: unknown command ${command}\n` + await usage() + '\n')
    return 2
  }
  const file = values.config ?? process.env.SWITCHBOARD_CONFIG
  if (file === undefined) {
    process.stderr.write('switchboard: --config <file> is required\n' + await usage() + '\n')
    return 2
  }
  const query = command === 'explain' ? explainQuery(values) : undefined
  if (typeof query === 'string') {
    process.stderr.write(`switchboard explain: ${query}\n` + await usage() + '\n')
    return 2
  }
  const { ConfigError, loadConfig } = await import('./config/load-config.ts')
  let config
  try {
    config = await loadConfig(file, process.env)
  } catch (err: unknown) {
    if (err instanceof ConfigError || isSwitchboardError(err)) {
      process.stderr.write(`switchboard: ${err.message}\n`)
      return 1
    }
    throw err
  }
  if (command === 'validate') {
    process.stdout.write(`${file}: OK (${config.upstreams.length} upstream(s))\n`)
    return 0
  }
  if (query !== undefined) {
    const { explainAccess } = await import('./policy/explain.ts')
    const { verdict, lines } = explainAccess(config, query)
    process.stdout.write(lines.join('\n') + '\n')
    return EXPLAIN_EXIT[verdict]
  }
  const [{ buildApp }, { createStdoutLogger }, { watchConfig }, { describeListenError }, { killAllProcessGroups }] = await Promise.all([
    import('./app.ts'), import('./observability/logger.ts'), import('./ops/watch-config.ts'), import('./net/listen-error.ts'), import('./upstream/stdio-transport.ts')
  ])
  const log = createStdoutLogger(config.logLevel, { maxStringChars: config.logging.maxStringChars })
  const { app, admin, shutdown, reload } = await buildApp(config, log, process.env, { configFile: file })
  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) {
      // An operator's second Ctrl-C means "now": the drain delay is cut short, calls in flight still get graceMs.
      log.info({ signal }, 'second signal: closing without waiting for the rest of the drain delay')
      void shutdown()
      return
    }
    stopping = true
    log.info({ signal }, 'shutting down')
    shutdown().then(() => {
      log.info('stopped')
      process.exit(0)
    }, (err: unknown) => {
      log.error({ err }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.on('SIGTERM', () => { stop('SIGTERM') })
  process.on('SIGINT', () => { stop('SIGINT') })
  process.on('SIGHUP', () => { if (!stopping) void reload('SIGHUP') })
  if (values.watch === true) {
    const unwatch = await watchConfig(file, () => { if (!stopping) void reload('watch') }, (err) => { log.warn({ err, file }, 'cannot watch the config file; SIGHUP still reloads') })
    app.addHook('onClose', async () => { unwatch() })
  }
  // Whatever way the process ends, no upstream process group outlives it.
  process.on('exit', killAllProcessGroups)
  const cannotListen = async (err: unknown, target: ListenTarget): Promise<number> => {
    const line = describeListenError(err, target)
    if (line === undefined) throw err
    process.stderr.write(`switchboard: ${line}\n`)
    stopping = true
    // Upstreams started when the app became ready; none may outlive a gateway that never served.
    await app.close().catch((closeErr: unknown) => { log.error({ err: closeErr }, 'close after a failed listen failed') })
    return 1
  }
  // The admin listener first: a gateway that cannot open it exits before its MCP listener (and its
  // /readyz) ever answers, so no balancer takes it for a ready replica in the meantime.
  if (admin !== undefined && config.admin !== undefined) {
    try {
      await admin.listen({ host: config.admin.listen.host, port: config.admin.listen.port })
    } catch (err: unknown) {
      return await cannotListen(err, { ...config.admin.listen, setting: 'admin.listen' })
    }
    log.info({ url: `http://${config.admin.listen.host}:${(admin.server.address() as { port: number }).port}/admin` }, 'admin API listening')
  }
  try {
    await app.listen({ host: config.listen.host, port: config.listen.port })
  } catch (err: unknown) {
    return await cannotListen(err, { ...config.listen, setting: 'listen' })
  }
  log.info({ url: `http://${config.listen.host}:${(app.server.address() as { port: number }).port}/mcp`, upstreams: config.upstreams.length }, 'switchboard listening')
  return -1
}

main(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exit(code)
}, (err: unknown) => {
  process.stderr.write(`switchboard: fatal: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
