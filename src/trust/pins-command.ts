import { parseArgs } from 'node:util'
import type { GatewayConfig } from '../config/schema.ts'
import { isSwitchboardError } from '../errors.ts'
import { isCommandResult, loadCommandConfig, type CommandResult } from '../ops/command-result.ts'
import { approvePin, getOwn, stateOf, type PinData, type PinRecord } from './pin-book.ts'
import { createPinStore, type PinStore } from './pin-store.ts'
import { shortFingerprint } from './tool-fingerprint.ts'

export const PINS_USAGE = `  switchboard pins list --config <file> [--upstream <name>]...
                                         every pinned tool per upstream: state (pinned, changed, held) and fingerprints
  switchboard pins approve --config <file> --upstream <name> (--tool <name>... | --all)
  switchboard pins approve --config <file> --all
                                         make the pending definition the pin; a running gateway serves the tool again
                                         (tool names are the upstream's own; exit 1 when a named tool has nothing pending)`

interface PinsArgs { upstream?: string[], tool?: string[], all?: boolean, config?: string }

const MAX_SHOWN_DESCRIPTION = 80

function usage (message: string): CommandResult {
  return { code: 2, stdout: '', stderr: `switchboard pins: ${message}\nusage:\n${PINS_USAGE}\n` }
}

/** `switchboard pins list|approve`: reads and writes the configured pin store; never touches process.* itself. */
export async function pinsCommand (argv: string[], env: NodeJS.ProcessEnv): Promise<CommandResult> {
  let values: PinsArgs
  let positionals: string[]
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string', short: 'c' },
        upstream: { type: 'string', multiple: true },
        tool: { type: 'string', multiple: true },
        all: { type: 'boolean' }
      },
      allowPositionals: true
    }))
  } catch (err: unknown) {
    return usage((err as Error).message)
  }
  const action = positionals[0]
  if (action !== 'list' && action !== 'approve') return usage('expected list or approve')
  const file = values.config ?? env.SWITCHBOARD_CONFIG
  if (file === undefined) return usage('--config <file> is required')
  if (action === 'approve') {
    const problem = approveArgsProblem(values)
    if (problem !== undefined) return usage(problem)
  }
  const config = await loadCommandConfig(file, env)
  if (isCommandResult(config)) return config
  const unknown = (values.upstream ?? []).filter(u => !config.upstreams.some(c => c.name === u))
  if (unknown.length > 0) return { code: 1, stdout: '', stderr: `switchboard pins: no upstream named ${unknown.join(', ')} in ${file}\n` }
  const store = createPinStore(config.pinning)
  try {
    const data = await store.load(config.upstreams.map(u => u.name))
    return action === 'list' ? list(config, store, data, values.upstream) : await approve(store, data, values)
  } catch (err: unknown) {
    if (isSwitchboardError(err)) return { code: 1, stdout: '', stderr: `switchboard pins: ${err.message}\n` }
    throw err
  } finally {
    await store.close()
  }
}

function approveArgsProblem (values: PinsArgs): string | undefined {
  const tools = values.tool ?? []
  const upstreams = values.upstream ?? []
  if (values.all === true && tools.length > 0) return '--all and --tool exclude each other'
  if (values.all !== true && tools.length === 0) return 'approve needs --tool <name> (one or more) or --all'
  if (tools.length > 0 && upstreams.length !== 1) return '--tool needs exactly one --upstream <name>'
  return undefined
}

function describe (record: PinRecord): string {
  const state = stateOf(record)
  let line = `${state.padEnd(8)} pinned ${shortFingerprint(record.fingerprint).padEnd(12)}`
  if (record.pending !== undefined) {
    const text = record.pending.description
    line += `  pending ${shortFingerprint(record.pending.fingerprint)}  seen ${record.pending.seenAt}`
    if (text !== undefined) line += `  ${JSON.stringify(text.length > MAX_SHOWN_DESCRIPTION ? text.slice(0, MAX_SHOWN_DESCRIPTION) + '…' : text)}`
  }
  return line
}

function list (config: GatewayConfig, store: PinStore, data: PinData, only: string[] | undefined): CommandResult {
  const lines = [`pins: ${store.where} (mode ${config.pinning.mode}, newTools ${config.pinning.newTools})`]
  const names = [...new Set([...config.upstreams.map(u => u.name), ...Object.keys(data)])]
    .filter(u => only === undefined || only.includes(u)).sort()
  for (const upstream of names) {
    const records = getOwn(data, upstream) ?? {}
    const tools = Object.keys(records).sort()
    const note = config.upstreams.some(u => u.name === upstream) ? '' : ' (not in the config)'
    lines.push(`${upstream}${note}: ${tools.length === 0 ? 'no pins yet' : `${tools.length} tool(s)`}`)
    const width = Math.max(0, ...tools.map(t => t.length))
    for (const tool of tools) lines.push(`  ${tool.padEnd(width)}  ${describe(records[tool] as PinRecord)}`)
  }
  return { code: 0, stdout: lines.join('\n') + '\n', stderr: '' }
}

async function approve (store: PinStore, data: PinData, values: PinsArgs): Promise<CommandResult> {
  const now = new Date()
  const out: string[] = []
  const problems: string[] = []
  const upstreams = values.upstream ?? Object.keys(data).sort()
  for (const upstream of upstreams) {
    const records = getOwn(data, upstream) ?? {}
    const tools = values.tool ?? Object.keys(records).sort()
    for (const tool of tools) {
      const record = getOwn(records, tool)
      const approved = record === undefined ? undefined : approvePin(record, now)
      if (record === undefined || approved === undefined) {
        if (values.all !== true) problems.push(`${upstream}/${tool}: ${record === undefined ? 'no such pinned tool' : 'nothing pending'}`)
        continue
      }
      await store.save(upstream, tool, approved)
      out.push(`approved ${upstream}/${tool}: ${shortFingerprint(record.fingerprint)} -> ${shortFingerprint(approved.fingerprint)}`)
    }
  }
  if (out.length === 0 && problems.length === 0) out.push('nothing pending to approve')
  return {
    code: problems.length > 0 ? 1 : 0,
    stdout: out.length === 0 ? '' : out.join('\n') + '\n',
    stderr: problems.map(p => `switchboard pins: ${p}\n`).join('')
  }
}
