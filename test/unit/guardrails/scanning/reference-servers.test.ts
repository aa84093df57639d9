import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { scanTool, type ScanContext } from '../../../../src/guardrails/scanning/scan-tool.ts'
import { createHostMatcher } from '../../../../src/guardrails/scanning/foreign-hosts.ts'
import { otherTools } from '../../../../src/guardrails/scanning/shadowing.ts'
import { DEFAULT_MAX_DESCRIPTION_CHARS } from '../../../../src/config/guardrails-schema.ts'
import { DISCOVERY_TOOLS } from '../../../../src/gateway/discovery-tools.ts'
import { REPO_ROOT } from '../../../helpers/spawn-fixture.ts'

// False positives are defects: the published reference servers, served side by side in one
// catalog (so every one is also checked for naming another's tools), have no finding under the
// default scanning config. filesystem, sequential-thinking, fetch, git and time are recorded
// definitions (test/fixtures/reference-tools/README.md); everything and memory are listed live.

type Tool = Readonly<Record<string, unknown>>

const RECORDED = ['filesystem', 'sequential-thinking', 'fetch', 'git', 'time'] as const
const INSTALLED = { everything: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'], memory: ['node_modules/@modelcontextprotocol/server-memory/dist/index.js'] } as const

async function listLive (args: readonly string[]): Promise<Tool[]> {
  const client = new Client({ name: 'scan-reference', version: '1' })
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [...args], cwd: REPO_ROOT, stderr: 'ignore' }))
  try {
    return (await client.listTools()).tools as Tool[]
  } finally {
    await client.close()
  }
}

async function recorded (server: string): Promise<Tool[]> {
  return JSON.parse(await readFile(path.join(REPO_ROOT, 'test', 'fixtures', 'reference-tools', `${server}.json`), 'utf8')) as Tool[]
}

test('the published reference servers have zero findings, listed side by side under the default config', async () => {
  const servers = new Map<string, Tool[]>()
  for (const [name, args] of Object.entries(INSTALLED)) servers.set(name, await listLive(args))
  for (const name of RECORDED) servers.set(name, await recorded(name))
  for (const [name, tools] of servers) assert.ok(tools.length > 0, `${name} lists tools`)
  const catalog = [...servers].flatMap(([upstream, tools]) => tools.map(t => ({ upstream, exposed: `${upstream}__${String(t.name)}`, original: String(t.name) })))
  const findings: string[] = []
  for (const [upstream, tools] of servers) {
    const context: ScanContext = { allowedHost: createHostMatcher([]), maxDescriptionChars: DEFAULT_MAX_DESCRIPTION_CHARS, others: otherTools(upstream, catalog) }
    for (const tool of tools) for (const f of scanTool(tool, context)) findings.push(`${upstream}/${String(tool.name)} ${f.rule} at ${f.path}: ${f.reason}`)
  }
  assert.deepEqual(findings, [])
  assert.equal(servers.get('filesystem')?.length, 14)
  assert.equal(servers.get('git')?.length, 12)
})

test('the gateway\'s own discovery tools (search_tools, call_tool) have zero findings', () => {
  const context: ScanContext = { allowedHost: createHostMatcher([]), maxDescriptionChars: DEFAULT_MAX_DESCRIPTION_CHARS, others: otherTools('switchboard', []) }
  assert.ok(DISCOVERY_TOOLS.length >= 2)
  for (const tool of DISCOVERY_TOOLS) assert.deepEqual(scanTool(tool, context), [], String(tool.name))
})
