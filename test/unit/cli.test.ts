import { describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runCommand } from '../helpers/cli.ts'

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** A copy of the launcher next to a stand-in source tree and build, each printing which one ran. */
async function launcherSandbox (t: TestContext, { built }: { built: boolean }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-launcher-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  await mkdir(join(dir, 'src', 'config'), { recursive: true })
  await copyFile(join(REPO_ROOT, 'src', 'cli.js'), join(dir, 'src', 'cli.js'))
  await writeFile(join(dir, 'src', 'main.ts'), "const args: string[] = process.argv.slice(2)\nprocess.stdout.write('source ' + args.join(' ') + '\\n')\n")
  await writeFile(join(dir, 'src', 'config', 'schema.ts'), 'export const X: number = 1\n')
  await writeFile(join(dir, 'package.json'), '{ "type": "module" }\n')
  // The launcher finds tsx the way an installed checkout does: in node_modules next to src.
  await symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'))
  if (built) {
    await mkdir(join(dir, 'dist', 'src'), { recursive: true })
    await writeFile(join(dir, 'dist', 'src', 'main.js'), "process.stdout.write('built ' + process.argv.slice(2).join(' ') + '\\n')\n")
  }
  return dir
}

async function setTime (file: string, secondsAgo: number): Promise<void> {
  const at = new Date(Date.now() - secondsAgo * 1000)
  await utimes(file, at, at)
}

describe('the switchboard launcher (src/cli.js, the package bin)', () => {
  it('runs the TypeScript source through tsx when there is no build, with the arguments given', async (t) => {
    const dir = await launcherSandbox(t, { built: false })
    const result = await runCommand(process.execPath, [join(dir, 'src', 'cli.js'), 'validate', '--config', 'x.yaml'], {}, dir)
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, 'source validate --config x.yaml\n')
  })

  it('runs the build when it is newer than every source file', async (t) => {
    const dir = await launcherSandbox(t, { built: true })
    for (const file of ['src/main.ts', 'src/config/schema.ts']) await setTime(join(dir, file), 60)
    const result = await runCommand(process.execPath, [join(dir, 'src', 'cli.js'), '--version'], {}, dir)
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, 'built --version\n')
  })

  it('runs the source when any source file changed after the build, so a stale build never runs', async (t) => {
    const dir = await launcherSandbox(t, { built: true })
    await setTime(join(dir, 'src', 'main.ts'), 60)
    await setTime(join(dir, 'dist', 'src', 'main.js'), 30)
    const result = await runCommand(process.execPath, [join(dir, 'src', 'cli.js'), '--version'], {}, dir)
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, 'source --version\n', 'src/config/schema.ts is newer than the build')
  })

  it('is what `npx switchboard` runs in the repository right after npm ci', async () => {
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string, bin: Record<string, string> }
    assert.deepEqual(pkg.bin, { switchboard: 'src/cli.js' })
    // Run from `npm exec -c …`, these would tell the inner npx what to run instead.
    const npx = (args: string[]): ReturnType<typeof runCommand> => runCommand('npx', args, {}, REPO_ROOT, ['npm_config_call', 'npm_config_package'])
    const version = await npx(['switchboard', '--version'])
    assert.equal(version.code, 0, version.stderr)
    assert.equal(version.stdout, `${pkg.version}\n`)
    const validate = await npx(['switchboard', 'validate', '--config', 'config/gateway.yaml'])
    assert.equal(validate.code, 0, validate.stderr)
    assert.match(validate.stdout, /^config\/gateway\.yaml: OK \(2 upstream\(s\)\)\n$/)
  })
})
