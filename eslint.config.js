import { createRequire } from 'node:module'
import neostandard from 'neostandard'
import tseslint from 'typescript-eslint'

// neostandard's own copy of `globals` (it gives every file Node's globals): the console's browser
// modules get the browser's instead, and each Node-only global is switched off for them.
const globals = createRequire(import.meta.resolve('neostandard'))('globals')
const nodeOnly = Object.keys(globals.node).filter(name => !(name in globals.browser))
const browserGlobals = { ...globals.browser, ...Object.fromEntries(nodeOnly.map(name => [name, 'off'])) }

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', 'node_modules/**'] }),
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // node:test's test() returns a promise the runner itself tracks.
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }] }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-explicit-any': 'error',
      // `void promise` is how a deliberately unawaited promise is marked.
      'no-void': ['error', { allowAsStatement: true }],
      '@typescript-eslint/consistent-type-imports': 'error'
    }
  },
  {
    // The operator console: plain ES modules the browser runs as they are (no build, no typecheck).
    files: ['src/console/**/*.js'],
    languageOptions: { sourceType: 'module', globals: browserGlobals }
  }
]
