import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml, parseAllDocuments } from 'yaml'
import { Deployment } from 'kubernetes-models/apps/v1/Deployment'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget'
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap'
import type { IContainer } from 'kubernetes-models/v1/Container'
import { Namespace } from 'kubernetes-models/v1/Namespace'
import { Secret } from 'kubernetes-models/v1/Secret'
import { Service } from 'kubernetes-models/v1/Service'
import { parseConfig } from '../../../src/config/load-config.ts'
import type { GatewayConfig } from '../../../src/config/schema.ts'
import { REPO_ROOT, imagePinProblem, readRepoFile, worstCaseShutdownMs } from '../../helpers/deploy-files.ts'

// Every object in deploy/kubernetes is validated against the Kubernetes OpenAPI schemas
// (kubernetes-models), then checked against the others and against the gateway's own config
// validation, so a manifest that kubectl would accept but that could not work fails here. The
// schemas do not reject unknown fields, so each field that matters is read below by its exact name.

const DIR = 'deploy/kubernetes'
const KUSTOMIZATION = 'kustomization.yaml'
const EXAMPLE_SECRET = 'secret.example.yaml'
const CONFIG_DIR = '/etc/switchboard'
const CONFIG_KEY = 'gateway.yaml'
const MODELS = [Namespace, ConfigMap, Secret, Service, Deployment, PodDisruptionBudget, HorizontalPodAutoscaler, NetworkPolicy] as const

type Manifest = InstanceType<typeof MODELS[number]>
interface Loaded { file: string, model: Manifest }
type Labels = Record<string, string> | undefined

function manifestFiles (): string[] {
  return readdirSync(join(REPO_ROOT, DIR)).filter(f => /\.ya?ml$/.test(f) && f !== KUSTOMIZATION).sort()
}

let loaded: Loaded[] | undefined
/** Every document of every manifest, as its kubernetes-models class, validated. */
function manifests (): Loaded[] {
  loaded ??= manifestFiles().flatMap(file => parseAllDocuments(readRepoFile(`${DIR}/${file}`)).map((doc, i) => {
    assert.deepEqual(doc.errors, [], `${file} document ${i}`)
    const data = doc.toJS() as { apiVersion?: unknown, kind?: unknown }
    const Model = MODELS.find(m => m.apiVersion === data.apiVersion && m.kind === data.kind)
    assert.ok(Model !== undefined, `${file} document ${i}: no model for ${String(data.apiVersion)} ${String(data.kind)}`)
    const model = new Model(data as never)
    try { model.validate() } catch (err: unknown) { assert.fail(`${file} document ${i} (${model.kind}): ${(err as Error).message}`) }
    return { file, model }
  }))
  return loaded
}

function all<T extends Manifest> (type: abstract new (...args: never[]) => T, { example = false } = {}): T[] {
  return manifests().filter(m => example || m.file !== EXAMPLE_SECRET).map(m => m.model).filter((m): m is T => m instanceof type)
}

function one<T extends Manifest> (type: abstract new (...args: never[]) => T, name: string): T {
  const found = all(type, { example: true }).filter(m => m.metadata?.name === name)
  assert.equal(found.length, 1, `one ${type.name} named ${name}`)
  return found[0] as T
}

/** The pods of the Deployment whose template carries every one of these labels. */
function selectedDeployments (selector: Labels): Deployment[] {
  assert.ok(selector !== undefined && Object.keys(selector).length > 0, 'an empty selector selects everything')
  return all(Deployment).filter(d => Object.entries(selector).every(([k, v]) => d.spec?.template.metadata?.labels?.[k] === v))
}

const GATEWAY = 'switchboard'
const gateway = (): Deployment => one(Deployment, GATEWAY)
function gatewayContainer (): IContainer {
  const containers = gateway().spec?.template.spec?.containers ?? []
  assert.equal(containers.length, 1)
  return containers[0] as IContainer
}

function containerPort (container: IContainer, port: number | string | undefined): number {
  if (typeof port === 'number') return port
  const named = container.ports?.find(p => p.name === port)
  assert.ok(named !== undefined, `no container port named ${String(port)}`)
  return named.containerPort
}

function exampleSecretValues (): Record<string, string> {
  const secret = one(Secret, GATEWAY)
  const decoded = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]))
  return { ...decoded, ...secret.stringData }
}

/** The environment Kubernetes gives the container: secretKeyRefs from the example Secret, $(VAR) expanded. */
function containerEnv (container: IContainer): NodeJS.ProcessEnv {
  const secret = exampleSecretValues()
  const env: Record<string, string> = {}
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef
    if (ref !== undefined) {
      assert.equal(ref.name, GATEWAY, `${e.name}: the Secret secret.example.yaml describes`)
      const value = secret[ref.key]
      assert.ok(value !== undefined, `${e.name}: key ${ref.key} is not in ${EXAMPLE_SECRET}`)
      env[e.name] = value
    } else {
      assert.ok(e.value !== undefined, `${e.name}: a value or a secretKeyRef`)
      env[e.name] = e.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (ref: string, name: string) => env[name] ?? ref)
    }
  }
  return env
}

function gatewayConfig (): GatewayConfig {
  const text = one(ConfigMap, 'switchboard-config').data?.[CONFIG_KEY]
  assert.ok(text !== undefined, `the ConfigMap has no ${CONFIG_KEY}`)
  return parseConfig(text, containerEnv(gatewayContainer()), `${DIR}/configmap.yaml`)
}

describe('deploy/kubernetes', () => {
  it('holds only known kinds, each valid against the Kubernetes schemas', () => {
    const kinds = manifests().map(m => `${m.file}: ${m.model.kind}`)
    for (const expected of ['Namespace', 'ConfigMap', 'Secret', 'Service', 'Deployment', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'NetworkPolicy']) {
      assert.ok(kinds.some(k => k.endsWith(`: ${expected}`)), `no ${expected} in ${DIR}`)
    }
  })

  it('lists every manifest in kustomization.yaml except the example Secret, all in one namespace', () => {
    const kustomization = parseYaml(readRepoFile(`${DIR}/${KUSTOMIZATION}`)) as { apiVersion?: string, kind?: string, namespace?: string, resources?: string[] }
    assert.equal(kustomization.apiVersion, 'kustomize.config.k8s.io/v1beta1')
    assert.equal(kustomization.kind, 'Kustomization')
    assert.deepEqual([...kustomization.resources ?? []].sort(), manifestFiles().filter(f => f !== EXAMPLE_SECRET))
    const namespace = kustomization.namespace
    assert.deepEqual(all(Namespace).map(n => n.metadata?.name), [namespace])
    for (const { file, model } of manifests()) {
      const own = model.metadata?.namespace
      assert.ok(own === undefined || own === namespace, `${file}: ${model.kind} ${String(model.metadata?.name)} in namespace ${own}`)
    }
    assert.equal(one(Secret, GATEWAY).metadata?.namespace, namespace, 'the example Secret names the namespace it must be created in')
  })

  it('pins every image, the gateway\'s to the package version', () => {
    const version = (JSON.parse(readRepoFile('package.json')) as { version: string }).version
    assert.equal(gatewayContainer().image, `switchboard:${version}`)
    for (const d of all(Deployment)) {
      for (const c of d.spec?.template.spec?.containers ?? []) assert.equal(imagePinProblem(c.image ?? ''), undefined, `${String(d.metadata?.name)}/${c.name}`)
    }
  })

  it('runs every pod restricted and bounded: non-root, read-only root, no privileges, requests and limits', () => {
    for (const d of all(Deployment)) {
      const pod = d.spec?.template.spec
      const name = String(d.metadata?.name)
      assert.equal(pod?.securityContext?.runAsNonRoot, true, name)
      assert.equal(pod?.securityContext?.seccompProfile?.type, 'RuntimeDefault', name)
      assert.equal(pod?.automountServiceAccountToken, false, `${name} never talks to the API server`)
      for (const c of pod?.containers ?? []) {
        const where = `${name}/${c.name}`
        assert.equal(c.securityContext?.runAsNonRoot, true, where)
        assert.equal(c.securityContext?.allowPrivilegeEscalation, false, where)
        assert.equal(c.securityContext?.readOnlyRootFilesystem, true, where)
        assert.deepEqual(c.securityContext?.capabilities?.drop, ['ALL'], where)
        assert.equal(c.securityContext?.seccompProfile?.type, 'RuntimeDefault', where)
        for (const kind of ['requests', 'limits'] as const) {
          assert.ok(c.resources?.[kind]?.cpu !== undefined && c.resources[kind].memory !== undefined, `${where}: ${kind} cpu and memory`)
        }
      }
    }
    assert.equal(gateway().spec?.template.spec?.securityContext?.runAsUser, 1000, 'the image\'s node user')
    assert.equal(gatewayContainer().securityContext?.runAsUser, 1000)
  })

  it('selects the Deployments\' pods from every Service, the PDB, the HPA and the NetworkPolicies', () => {
    for (const d of all(Deployment)) {
      const labels = d.spec?.template.metadata?.labels ?? {}
      for (const [k, v] of Object.entries(d.spec?.selector.matchLabels ?? {})) assert.equal(labels[k], v, `${String(d.metadata?.name)}: selector matches its template`)
    }
    for (const s of all(Service)) {
      const [target, ...others] = selectedDeployments(s.spec?.selector)
      assert.ok(target !== undefined && others.length === 0, `Service ${String(s.metadata?.name)} selects one Deployment's pods`)
      const container = target.spec?.template.spec?.containers[0] as IContainer
      for (const p of s.spec?.ports ?? []) containerPort(container, p.targetPort ?? p.port)
    }
    assert.deepEqual(selectedDeployments(one(PodDisruptionBudget, GATEWAY).spec?.selector?.matchLabels), [gateway()])
    const hpa = one(HorizontalPodAutoscaler, GATEWAY)
    assert.deepEqual(hpa.spec?.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: GATEWAY })
    assert.equal(hpa.spec?.minReplicas, gateway().spec?.replicas)
    assert.ok(hpa.spec?.metrics?.some(m => m.type === 'Resource' && m.resource?.name === 'cpu'), 'the HPA scales on CPU')
    for (const np of all(NetworkPolicy)) assert.equal(selectedDeployments(np.spec?.podSelector?.matchLabels).length, 1, `NetworkPolicy ${String(np.metadata?.name)}`)
  })

  it('mounts the ConfigMap as a directory and runs the gateway with --config on it and --watch', () => {
    const container = gatewayContainer()
    assert.deepEqual(container.args, ['--config', `${CONFIG_DIR}/${CONFIG_KEY}`, '--watch'])
    const mount = container.volumeMounts?.find(m => m.mountPath === CONFIG_DIR)
    assert.ok(mount !== undefined, `a volume at ${CONFIG_DIR}`)
    assert.equal(mount.subPath, undefined, 'a subPath mount never sees a ConfigMap update, so --watch would not either')
    const volume = gateway().spec?.template.spec?.volumes?.find(v => v.name === mount.name)
    const name = volume?.configMap?.name
    assert.ok(name !== undefined, `volume ${mount.name} is a ConfigMap`)
    const configMap = one(ConfigMap, name)
    const items = volume?.configMap?.items
    const key = items === undefined ? CONFIG_KEY : items.find(i => i.path === CONFIG_KEY)?.key
    assert.ok(key !== undefined && configMap.data?.[key] !== undefined, `ConfigMap ${name} has the key mounted as ${CONFIG_KEY}`)
    const tmp = container.volumeMounts?.find(m => m.mountPath === '/tmp')
    assert.ok(tmp !== undefined, 'a writable /tmp under the read-only root')
  })

  it('takes every secret from a key of the example Secret, and the config validates with that environment', () => {
    for (const d of all(Deployment)) for (const c of d.spec?.template.spec?.containers ?? []) containerEnv(c)
    const config = gatewayConfig()
    assert.equal(config.sessions.store, 'redis')
    assert.equal(config.rateLimits.store, 'redis')
    assert.equal(config.pinning.store, 'redis')
    assert.ok(config.auth !== undefined)
    const redis = new URL(config.redis?.url ?? '')
    const redisService = one(Service, redis.hostname)
    assert.ok(redisService.spec?.ports?.some(p => p.port === Number(redis.port)), `the Redis Service listens on ${redis.port}`)
    assert.equal(redis.password, exampleSecretValues()['redis-password'], 'the gateway logs in with the password Redis requires')
  })

  it('serves MCP, probes and metrics on the config\'s listen port, and keeps the admin port out of every Service', () => {
    const config = gatewayConfig()
    const container = gatewayContainer()
    const port = config.listen.port
    assert.equal(config.listen.host, '0.0.0.0')
    assert.equal(container.livenessProbe?.httpGet?.path, '/healthz')
    assert.equal(container.readinessProbe?.httpGet?.path, '/readyz')
    for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
      if (probe !== undefined) assert.equal(containerPort(container, probe.httpGet?.port), port)
    }
    const annotations = gateway().spec?.template.metadata?.annotations ?? {}
    assert.equal(annotations['prometheus.io/scrape'], 'true')
    assert.equal(annotations['prometheus.io/port'], String(port))
    assert.equal(annotations['prometheus.io/path'], '/metrics')

    const admin = config.admin
    assert.ok(admin !== undefined, 'the admin API is configured')
    assert.ok(container.ports?.some(p => p.containerPort === admin.listen.port), 'the admin port is declared')
    const service = one(Service, GATEWAY)
    assert.deepEqual(service.spec?.ports?.map(p => containerPort(container, p.targetPort ?? p.port)), [port])
    assert.equal(service.spec?.sessionAffinity ?? 'None', 'None', 'sessions are shared: no affinity')
    const policy = one(NetworkPolicy, GATEWAY)
    const allowed = policy.spec?.ingress?.flatMap(r => r.ports ?? []).map(p => containerPort(container, p.port))
    assert.deepEqual(allowed, [port])

    const namespace = service.metadata?.namespace ?? all(Namespace)[0]?.metadata?.name
    for (const host of [GATEWAY, `${GATEWAY}.${String(namespace)}.svc`, `${GATEWAY}.${String(namespace)}.svc.cluster.local`]) {
      assert.ok(config.http.allowedHosts.includes(host), `http.allowedHosts has ${host}`)
    }
  })

  it('gives a pod longer to stop than the config can take to shut down', () => {
    const config = gatewayConfig()
    assert.equal(config.shutdown.drainDelayMs, 5000, 'long enough for the endpoint to be removed everywhere')
    const graceSeconds = gateway().spec?.template.spec?.terminationGracePeriodSeconds
    assert.ok(graceSeconds !== undefined)
    assert.ok(graceSeconds * 1000 > worstCaseShutdownMs(config),
      `terminationGracePeriodSeconds ${graceSeconds} must exceed drainDelayMs + graceMs + 2 × killAfterMs = ${worstCaseShutdownMs(config)} ms`)
  })
})
