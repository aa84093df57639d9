import { parseArgs } from 'node:util'
import type { GatewayConfig } from '../config/schema.ts'
import { isSwitchboardError } from '../errors.ts'
import { isCommandResult, loadCommandConfig, type CommandResult } from '../ops/command-result.ts'
import type { PinData } from './pin-book.ts'
import { approvePins, pinsView, selectionProblem, type PinView } from './pin-approval.ts'
import { createPinStore, type PinStore } from './pin-store.ts'
import { shortFingerprint } from './tool-fingerprint.ts'
import { isTruncatedDefinition, type StoredDefinition } from './tool-definition.ts'
import { visibleText } from '../protocol/visible-text.ts'

export const PINS_USAGE = `  switchboard pins list --config <file> [--upstream <name>]... [--definitions]
                                         every pinned tool per upstream: state (pinned, changed, held), fingerprints,
                                         and the definition scan's findings of a pending definition;
                                         --definitions: the pinned and the pending definition too, as JSON
  switchboard pins approve --config <file> --upstream <name> (--tool <name>... | --all)
  switchboard pins approve --config <file> --all
                                         make the pending definition the pin; a running gateway serves the tool again
                                         (tool names are the upstream's own; exit 1 when a named tool has nothing pending)`

interface PinsArgs { upstream?: string[], tool?: string[], all?: boolean, config?: string, definitions?: boolean }

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
        all: { type: 'boolean' },
        definitions: { type: 'boolean' }
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
    const problem = selectionProblem({ upstreams: values.upstream, tools: values.tool, all: values.all })
    if (problem !== undefined) return usage(problem)
  }
  const config = await loadCommandConfig(file, env)
  if (isCommandResult(config)) return config
  const unknown = (values.upstream ?? []).filter(u => !config.upstreams.some(c => c.name === u))
  if (unknown.length > 0) return { code: 1, stdout: '', stderr: `switchboard pins: no upstream named ${unknown.join(', ')} in ${file}\n` }
  const store = createPinStore(config.pinning, config.redis)
  try {
    const data = await store.load(config.upstreams.map(u => u.name))
    return action === 'list' ? list(config, store, data, values) : await approve(store, data, values)
  } catch (err: unknown) {
    if (isSwitchboardError(err)) return { code: 1, stdout: '', stderr: `switchboard pins: ${err.message}\n` }
    throw err
  } finally {
    await store.close()
  }
}

/**
 * Invisible and bidirectional characters are the usual way to hide text from a reviewer: shown
 * escaped (visibleText). JSON.stringify already escapes the C0 controls inside strings.
 */
function shown (json: string): string {
  return visibleText(json, { multiline: true })
}

function describe (view: PinView): string[] {
  let line = `${view.state.padEnd(8)} pinned ${shortFingerprint(view.fingerprint).padEnd(12)}`
  const { pending } = view
  if (pending === undefined) return [line]
  const text = pending.description
  line += `  pending ${shortFingerprint(pending.fingerprint)}  seen ${pending.seenAt}`
  if (text !== undefined) line += `  ${shown(JSON.stringify(text.length > MAX_SHOWN_DESCRIPTION ? text.slice(0, MAX_SHOWN_DESCRIPTION) + '…' : text))}`
  if (pending.heldBy === 'scan') line += '  (held by the definition scan)'
  // Reasons are the scanner's own short, escaped text; paths are JSON paths of the definition.
  return [line, ...pending.findings.map(f => `      finding ${f.rule} at ${f.path}: ${f.reason}`)]
}

function definitionLines (label: string, definition: StoredDefinition | null): string[] {
  if (definition === null) return [`      ${label} definition: not recorded`]
  if (isTruncatedDefinition(definition)) return [`      ${label} definition: not kept (${definition.bytes} bytes of JSON, over the limit)`]
  const json = shown(JSON.stringify(definition, null, 2))
  return [`      ${label} definition:`, ...json.split('\n').map(line => `        ${line}`)]
}

function list (config: GatewayConfig, store: PinStore, data: PinData, values: PinsArgs): CommandResult {
  const only = values.upstream
  const lines = [`pins: ${store.where} (mode ${config.pinning.mode}, newTools ${config.pinning.newTools}, scanning ${config.scanning.mode})`]
  for (const { upstream, inConfig, tools } of pinsView(data, config.upstreams.map(u => u.name), only)) {
    lines.push(`${visibleText(upstream)}${inConfig ? '' : ' (not in the config)'}: ${tools.length === 0 ? 'no pins yet' : `${tools.length} tool(s)`}`)
    const width = Math.max(0, ...tools.map(t => visibleText(t.tool).length))
    for (const view of tools) {
      const [first, ...rest] = describe(view)
      lines.push(`  ${visibleText(view.tool).padEnd(width)}  ${first ?? ''}`, ...rest)
      if (values.definitions !== true) continue
      if (view.fingerprint !== null) lines.push(...definitionLines('pinned', view.definition))
      if (view.pending !== undefined) lines.push(...definitionLines('pending', view.pending.definition))
    }
  }
  return { code: 0, stdout: lines.join('\n') + '\n', stderr: '' }
}

async function approve (store: PinStore, data: PinData, values: PinsArgs): Promise<CommandResult> {
  const { approved, problems } = await approvePins(store, data, { upstreams: values.upstream, tools: values.tool, all: values.all }, new Date())
  const out = approved.map(a => `approved ${visibleText(`${a.upstream}/${a.tool}`)}: ${shortFingerprint(a.from)} -> ${shortFingerprint(a.to)}`)
  if (out.length === 0 && problems.length === 0) out.push('nothing pending to approve')
  return {
    code: problems.length > 0 ? 1 : 0,
    stdout: out.length === 0 ? '' : out.join('\n') + '\n',
    stderr: problems.map(p => `switchboard pins: ${p}\n`).join('')
  }
}
