import type { TestContext } from 'node:test'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface RunResult { code: number | null, stdout: string, stderr: string }

/** Runs src/main.ts with `args` (no SWITCHBOARD_CONFIG inherited) and collects its output. */
export function runCli (args: string[], extraEnv: Record<string, string> = {}): Promise<RunResult> {
  return runCommand(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], extraEnv)
}

/** Runs `command` in the repository root (no SWITCHBOARD_CONFIG, nor the variables in `unset`, inherited) and collects its output. */
export function runCommand (command: string, args: string[], extraEnv: Record<string, string> = {}, cwd = REPO_ROOT, unset: readonly string[] = []): Promise<RunResult> {
  const env = { ...process.env, ...extraEnv }
  delete env.SWITCHBOARD_CONFIG
  for (const name of unset) delete env[name]
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 30_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Writes a config file into a temporary directory removed when the test ends. */
export async function tempConfig (t: TestContext, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-cli-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const file = join(dir, 'gateway.yaml')
  await writeFile(file, text)
  return file
}
