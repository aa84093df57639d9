import { z } from 'zod'

// The parts of an MCP Registry server.json (schema 2025-09-29 and later, camelCase) that `switchboard
// add` turns into an upstream. Read loosely: unknown fields are kept out of the way, not refused, so a
// registry that adds fields (icons, title, _meta) never breaks the command.

const input = {
  description: z.string().optional(),
  isRequired: z.boolean().optional(),
  isSecret: z.boolean().optional(),
  format: z.string().optional(),
  value: z.string().optional(),
  default: z.string().optional(),
  placeholder: z.string().optional(),
  choices: z.array(z.string()).optional()
}

const inputSchema = z.looseObject(input)
export type RegistryInput = z.output<typeof inputSchema>

const withVariables = { ...input, variables: z.record(z.string(), inputSchema).optional() }

const argumentSchema = z.looseObject({
  ...withVariables,
  type: z.enum(['positional', 'named']),
  name: z.string().optional(),
  valueHint: z.string().optional(),
  isRepeated: z.boolean().optional()
})
export type RegistryArgument = z.output<typeof argumentSchema>

const keyValueSchema = z.looseObject({ ...withVariables, name: z.string().min(1) })
export type RegistryKeyValue = z.output<typeof keyValueSchema>

const transportSchema = z.looseObject({
  type: z.string(),
  url: z.string().optional(),
  headers: z.array(keyValueSchema).optional(),
  variables: z.record(z.string(), inputSchema).optional()
})
export type RegistryTransport = z.output<typeof transportSchema>

const packageSchema = z.looseObject({
  registryType: z.string(),
  identifier: z.string().min(1),
  version: z.string().optional(),
  runtimeHint: z.string().optional(),
  transport: transportSchema.optional(),
  runtimeArguments: z.array(argumentSchema).optional(),
  packageArguments: z.array(argumentSchema).optional(),
  environmentVariables: z.array(keyValueSchema).optional()
})
export type RegistryPackage = z.output<typeof packageSchema>

export const serverDetailSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  title: z.string().optional(),
  version: z.string().optional(),
  websiteUrl: z.string().optional(),
  repository: z.looseObject({ url: z.string().optional() }).optional(),
  packages: z.array(packageSchema).optional(),
  remotes: z.array(transportSchema).optional()
})
export type ServerDetail = z.output<typeof serverDetailSchema>

const officialMeta = z.looseObject({ status: z.string().optional(), statusMessage: z.string().optional() })

/** GET /v0/servers/{name}/versions/latest: the server beside the registry's own metadata (its status: active, deprecated, deleted). */
export const serverResponseSchema = z.looseObject({
  server: serverDetailSchema,
  _meta: z.looseObject({ 'io.modelcontextprotocol.registry/official': officialMeta.optional() }).optional()
})

/** GET /v0/servers: a page of servers and the cursor of the next one. */
export const serverListSchema = z.looseObject({
  servers: z.array(serverResponseSchema),
  metadata: z.looseObject({ nextCursor: z.string().optional(), count: z.number().optional() }).optional()
})

/** How `add` can run a package: the registry types with a runner every host has (npx, uvx, docker). */
export const RUNNABLE_REGISTRY_TYPES = ['npm', 'pypi', 'oci'] as const
export type RunnableRegistryType = typeof RUNNABLE_REGISTRY_TYPES[number]

export function isRunnable (pkg: RegistryPackage): pkg is RegistryPackage & { registryType: RunnableRegistryType } {
  return (RUNNABLE_REGISTRY_TYPES as readonly string[]).includes(pkg.registryType) && (pkg.transport?.type ?? 'stdio') === 'stdio'
}

export function isUsableRemote (remote: RegistryTransport): boolean {
  return (remote.type === 'streamable-http' || remote.type === 'sse') && remote.url !== undefined
}

/** The package `add` runs: npm before PyPI before OCI (docker needs a daemon the others do not). */
export function pickPackage (server: ServerDetail): (RegistryPackage & { registryType: RunnableRegistryType }) | undefined {
  const runnable = (server.packages ?? []).filter(isRunnable)
  for (const type of RUNNABLE_REGISTRY_TYPES) {
    const found = runnable.find(p => p.registryType === type)
    if (found !== undefined) return found
  }
  return undefined
}

/** The remote `add` connects to: Streamable HTTP before the legacy SSE transport. */
export function pickRemote (server: ServerDetail): RegistryTransport | undefined {
  const usable = (server.remotes ?? []).filter(isUsableRemote)
  return usable.find(r => r.type === 'streamable-http') ?? usable[0]
}

/** What `add` makes of the server by default: a package when one is runnable, else a remote; undefined when neither. */
export function defaultKind (server: ServerDetail): RunnableRegistryType | 'streamable-http' | 'sse' | undefined {
  const pkg = pickPackage(server)
  if (pkg !== undefined) return pkg.registryType
  return pickRemote(server)?.type as 'streamable-http' | 'sse' | undefined
}
