/**
 * deploy/kubernetes, offline: every manifest valid against the Kubernetes
 * API's schemas and free of unknown fields (test/manifests.ts), the
 * kustomization complete, and the manifests wired to what the agent and
 * router really read: their WARMPATH_* settings load through the components'
 * own config schemas, and ports, probes, the drain timeout, Services, the HPA
 * and the PDB agree with them. `kubectl kustomize` builds the base when kubectl
 * is on PATH (else that test skips, saying so).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_SCHEMA } from '@warmpath/agent';
import { ROUTER_SCHEMA } from '@warmpath/router';
import { DEFAULT_GOSSIP_PORT } from '@warmpath/shared/gossip';
import { envName, loadConfig, type Schema } from '@warmpath/shared/runtime';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { findProgram } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { CLI_ROOT } from '../src/build.ts';
import { KUBE_DIR, loadYaml, schemaErrors, unknownFieldErrors, type Doc } from './manifests.ts';

interface Kustomization {
  resources: string[];
  configMapGenerator?: Array<{ name: string; files: string[] }>;
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
  [key: string]: unknown;
}
const KUBECTL = findProgram('kubectl');
/** kubectl is not a Debian package: Kubernetes publishes its own apt repository. */
const NO_KUBECTL =
  "SKIPPED: kubectl is not on PATH, so `kubectl kustomize` is not tried; install kubectl from Kubernetes' own apt repository (the `kubectl` package; .ci/run does not need it)";
const KUSTOMIZATION_KEYS = new Set(['apiVersion', 'kind', 'labels', 'resources', 'configMapGenerator', 'images']);

const kustomization = parseYaml(readFileSync(join(KUBE_DIR, 'kustomization.yaml'), 'utf8'), {
  version: '1.1',
}) as Kustomization;
const docs: Doc[] = kustomization.resources.flatMap((f) => loadYaml(join(KUBE_DIR, f), f));
const example = loadYaml(join(KUBE_DIR, 'swarm-key.example.yaml'), 'swarm-key.example.yaml');
const generated = new Set((kustomization.configMapGenerator ?? []).map((g) => g.name));

// Typed views of what the wiring checks read.
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  restartPolicy?: string;
  env?: EnvVar[];
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string> };
  securityContext?: { runAsUser?: number; runAsNonRoot?: boolean };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
}
interface PodSpec {
  initContainers?: Container[];
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsUser?: number };
  volumes?: Array<{ name: string; secret?: { secretName: string }; configMap?: { name: string }; emptyDir?: object }>;
}
interface Workload {
  metadata: { name: string };
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}
interface ServiceSpec {
  clusterIP?: string;
  publishNotReadyAddresses?: boolean;
  selector: Record<string, string>;
  ports: Array<{ port: number; targetPort: string | number }>;
}

const byKind = (kind: string): Doc[] => docs.filter((d) => d.obj.kind === kind);
const named = <T>(kind: string, name: string): T => {
  const d = byKind(kind).find((x) => x.obj.metadata.name === name);
  if (d === undefined) throw new Error(`no ${kind} ${name}`);
  return d.obj as unknown as T;
};
const configMaps = new Map(
  byKind('ConfigMap').map((d) => [d.obj.metadata.name, (d.obj as unknown as { data: Record<string, string> }).data]),
);

/** A container's environment as the process sees it: envFrom ConfigMaps, then env (downward-API fields as sample values). */
function environment(c: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) Object.assign(env, configMaps.get(from.configMapRef!.name));
  const samples: Record<string, string> = { 'status.podIP': '10.1.2.3', 'metadata.name': 'pod-0' };
  for (const e of c.env ?? []) env[e.name] = e.value ?? samples[e.valueFrom?.fieldRef?.fieldPath ?? ''] ?? '';
  return env;
}

/** Loads the component's config from the container's environment; every WARMPATH_* variable must be one of its keys. */
function configOf<S extends Schema>(schema: S, c: Container) {
  const env = environment(c);
  const known = new Set(Object.keys(schema).map((k) => envName(k)));
  expect(
    Object.keys(env).filter((k) => k.startsWith('WARMPATH_') && !known.has(k)),
    `${c.name}: WARMPATH_* variables that are not settings`,
  ).toEqual([]);
  return loadConfig(schema, { env });
}

const portOf = (c: Container, port: string | number): number =>
  typeof port === 'number' ? port : ((c.ports ?? []).find((p) => p.name === port)?.containerPort ?? NaN);

describe('deploy/kubernetes: schemas', () => {
  it('every manifest (and the example Secret) is valid against the Kubernetes 1.34 schemas', async () => {
    expect(docs.length).toBeGreaterThanOrEqual(8);
    expect(await schemaErrors([...docs, ...example])).toEqual([]);
  });

  it('no manifest has a field the Kubernetes API does not define', () => {
    expect(unknownFieldErrors([...docs, ...example])).toEqual([]);
  });

  it('rejects a deliberately wrong manifest: an unknown field, and a wrong type', async () => {
    const router = docs.find((d) => d.obj.kind === 'Deployment' && d.obj.metadata.name === 'warmpath-router')!;
    const typo = structuredClone(router);
    (typo.obj as unknown as Workload).spec.template.spec.containers[0]!.readinessProbe!.httpGet = {
      path: '/readyz',
      port: 'http',
      timeoutSecond: 1,
    } as never;
    expect(unknownFieldErrors([typo]).join('\n')).toMatch(/'"?timeoutSecond"?' does not exist/);
    expect(await schemaErrors([typo])).toEqual([]); // the API's own schemas let unknown fields through: hence the strict check
    const wrong = structuredClone(router);
    (wrong.obj as unknown as Workload).spec.template.spec.containers[0]!.ports![0]!.containerPort = '8080' as never;
    expect((await schemaErrors([wrong])).join('\n')).toMatch(/containerPort must be integer/);
    expect(unknownFieldErrors([wrong]).join('\n')).toMatch(/not assignable to type 'number'/);
  });
});

describe('deploy/kubernetes: the kustomization', () => {
  it('lists every manifest and script in the directory, and only known keys', () => {
    expect(Object.keys(kustomization).filter((k) => !KUSTOMIZATION_KEYS.has(k))).toEqual([]);
    const yamls = readdirSync(KUBE_DIR).filter(
      (f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && !f.endsWith('.example.yaml'),
    );
    expect([...kustomization.resources].sort()).toEqual(yamls.sort());
    const scripts = readdirSync(join(KUBE_DIR, 'scripts')).map((f) => `scripts/${f}`);
    expect((kustomization.configMapGenerator ?? []).flatMap((g) => g.files).sort()).toEqual(scripts.sort());
  });

  it('tags the warmpath image with the npm package version, and every image it names is used', () => {
    const version = (JSON.parse(readFileSync(join(CLI_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const used = new Set(
      byKind('Deployment').flatMap((d) => {
        const spec = (d.obj as unknown as Workload).spec.template.spec;
        return [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.image);
      }),
    );
    for (const image of kustomization.images ?? []) expect(used.has(image.name), image.name).toBe(true);
    expect(kustomization.images?.find((i) => i.name === 'warmpath')?.newTag).toBe(version);
  });

  // Listed only when kubectl is missing: the skip says what to install.
  if (KUBECTL === undefined) it.skip(NO_KUBECTL, () => {});

  it.runIf(KUBECTL)('builds with kubectl kustomize (when kubectl is installed), into valid objects', async () => {
    const out = execFileSync(KUBECTL!, ['kustomize', KUBE_DIR], { encoding: 'utf8' });
    const rendered = parseAllDocuments(out).map((d, i) => ({ where: `kustomize#${i}`, obj: d.toJS() as Doc['obj'] }));
    expect(await schemaErrors(rendered)).toEqual([]);
    expect(unknownFieldErrors(rendered)).toEqual([]);
    const kinds = rendered.map((d) => d.obj);
    expect(kinds.map((k) => k.kind).sort()).toEqual([...docs.map((d) => d.obj.kind), 'ConfigMap'].sort());
    // The generated ConfigMap's hashed name is what the pods mount.
    const scripts = kinds.find((k) => k.kind === 'ConfigMap' && k.metadata.name.startsWith('warmpath-scripts-'));
    expect(out).toContain(`name: ${scripts!.metadata.name}`);
  });
});

describe('deploy/kubernetes: wired to the agent and router as they are', () => {
  const model = named<Workload>('Deployment', 'warmpath-model-server');
  const router = named<Workload>('Deployment', 'warmpath-router');
  const agentContainer = model.spec.template.spec.initContainers!.find((c) => c.name === 'warmpath-agent')!;
  const engine = model.spec.template.spec.containers[0]!;
  const routerContainer = router.spec.template.spec.containers[0]!;

  it('runs the agent as a native sidecar (restartPolicy: Always) beside vLLM, non-root as the image user', () => {
    expect(agentContainer.restartPolicy).toBe('Always');
    expect(engine.image).toMatch(/^vllm\/vllm-openai:/);
    const uid = Number(/^USER (\d+)/m.exec(readFileSync(join(KUBE_DIR, '../../Dockerfile'), 'utf8'))![1]);
    expect(agentContainer.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: uid });
  });

  it("loads the agent's settings through its schema; ports, probes and the engine URL agree with them", () => {
    const config = configOf(AGENT_SCHEMA, agentContainer);
    expect(config.host).toBe('0.0.0.0');
    expect(portOf(agentContainer, 'proxy')).toBe(config.port);
    expect(portOf(agentContainer, 'admin')).toBe(config.adminPort);
    expect(config.advertiseHost).toBe('10.1.2.3');
    for (const probe of [agentContainer.startupProbe, agentContainer.livenessProbe])
      expect(probe?.httpGet?.path).toBe('/healthz');
    expect(agentContainer.readinessProbe?.httpGet?.path).toBe('/readyz');
    for (const probe of [agentContainer.startupProbe, agentContainer.livenessProbe, agentContainer.readinessProbe]) {
      expect(portOf(agentContainer, probe!.httpGet!.port)).toBe(config.adminPort);
    }
    expect(new URL(config.engineUrl).port).toBe(String(portOf(engine, 'engine')));
    expect(config.gossipListen.map((a) => /\/tcp\/(\d+)/.exec(a)?.[1])).toEqual([
      String(portOf(agentContainer, 'gossip')),
    ]);
  });

  it("gives the pod a grace period longer than the agent's drain, and vLLM's preStop drains the agent first", () => {
    const config = configOf(AGENT_SCHEMA, agentContainer);
    expect(model.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(
      config.drainTimeoutMs / 1000 + 10,
    );
    expect(engine.lifecycle?.preStop?.exec?.command.join(' ')).toContain('drain-agent.sh');
    expect(environment(engine).AGENT_PID_FILE).toBe(environment(agentContainer).AGENT_PID_FILE);
  });

  it("loads the router's settings through its schema; ports and probes agree with them", () => {
    const config = configOf(ROUTER_SCHEMA, routerContainer);
    expect(config.host).toBe('0.0.0.0');
    expect(portOf(routerContainer, 'http')).toBe(config.port);
    expect(routerContainer.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(routerContainer.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(config.fleet).toBe(configOf(AGENT_SCHEMA, agentContainer).fleet);
  });

  it('gives the router a grace period longer than its drain (the serving delay plus the in-flight deadline)', () => {
    const config = configOf(ROUTER_SCHEMA, routerContainer);
    expect(router.spec.template.spec.terminationGracePeriodSeconds! * 1_000).toBeGreaterThan(
      config.shutdownDelayMs + config.shutdownTimeoutMs,
    );
  });

  it('mounts the swarm key where both read it, from the Secret the example defines', () => {
    const secretName = example[0]!.obj.metadata.name;
    for (const [w, c] of [
      [model, agentContainer],
      [router, routerContainer],
    ] as const) {
      const path = environment(c).WARMPATH_SWARM_KEY!;
      const volume = (w.spec.template.spec.volumes ?? []).find((v) => v.secret?.secretName === secretName);
      expect(volume, `${c.name} mounts the ${secretName} Secret`).toBeDefined();
      const mount = (c.volumeMounts ?? []).find((m) => m.name === volume!.name)!;
      expect(path.startsWith(`${mount.mountPath}/`), `${path} is under ${mount.mountPath}`).toBe(true);
    }
  });

  it("agents and routers resolve the routers' headless Service (ready or not) on the gossip port; routers bound their router links and accept relayed state from the pod network", () => {
    const agent = configOf(AGENT_SCHEMA, agentContainer);
    const routerConfig = configOf(ROUTER_SCHEMA, routerContainer);
    for (const config of [agent, routerConfig]) {
      expect(config.bootstrapDns).toHaveLength(1);
      const service = named<{ spec: ServiceSpec }>('Service', config.bootstrapDns[0]!);
      expect(service.spec.clusterIP).toBe('None');
      expect(service.spec.publishNotReadyAddresses).toBe(true);
      expect(router.spec.template.metadata.labels).toMatchObject(service.spec.selector);
      // No port in the name: the default gossip port, which the routers listen on.
      expect(service.spec.ports.map((p) => p.port)).toEqual([DEFAULT_GOSSIP_PORT]);
      expect(portOf(routerContainer, 'gossip')).toBe(DEFAULT_GOSSIP_PORT);
    }
    expect(agent.gossipPeers).toBe(2);
    expect(routerConfig.gossipPeers).toBeGreaterThan(0);
    expect(routerConfig.agentNetworks.length).toBeGreaterThan(0);
    for (const [w, c] of [
      [model, agentContainer],
      [router, routerContainer],
    ] as const) {
      const path = configOf(c === agentContainer ? AGENT_SCHEMA : ROUTER_SCHEMA, c).identityFile;
      const mount = (c.volumeMounts ?? []).find((m) => path.startsWith(`${m.mountPath}/`));
      expect(mount, `${c.name} mounts a volume for ${path}`).toBeDefined();
      expect(
        w.spec.template.spec.volumes?.find((v) => v.name === mount!.name)?.emptyDir,
        `${path} is on an emptyDir`,
      ).toBeDefined();
    }
  });

  it('selectors, target ports, the HPA, the PDB and ConfigMap references all resolve', () => {
    for (const w of [model, router]) expect(w.spec.template.metadata.labels).toMatchObject(w.spec.selector.matchLabels);
    const pods = [model, router].map((w) => ({ labels: w.spec.template.metadata.labels, spec: w.spec.template.spec }));
    for (const svc of byKind('Service')) {
      const spec = (svc.obj as unknown as { spec: ServiceSpec }).spec;
      const pod = pods.find((p) => Object.entries(spec.selector).every(([k, v]) => p.labels[k] === v));
      expect(pod, `${svc.where} selects a pod`).toBeDefined();
      const containers = [...(pod!.spec.initContainers ?? []), ...pod!.spec.containers];
      for (const p of spec.ports)
        expect(
          containers.some((c) => !Number.isNaN(portOf(c, p.targetPort))),
          `${svc.where} port ${p.targetPort}`,
        ).toBe(true);
    }
    const hpa = named<{ spec: { scaleTargetRef: { kind: string; name: string } } }>(
      'HorizontalPodAutoscaler',
      'warmpath-router',
    );
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: router.metadata.name });
    expect(routerContainer.resources?.requests?.cpu, 'CPU utilization needs a CPU request').toBeDefined();
    const pdb = named<{ spec: { selector: { matchLabels: Record<string, string> } } }>(
      'PodDisruptionBudget',
      'warmpath-router',
    );
    expect(router.spec.template.metadata.labels).toMatchObject(pdb.spec.selector.matchLabels);
    for (const w of [model, router]) {
      for (const v of w.spec.template.spec.volumes ?? [])
        if (v.configMap !== undefined)
          expect(generated.has(v.configMap.name) || configMaps.has(v.configMap.name), v.configMap.name).toBe(true);
      for (const c of [...(w.spec.template.spec.initContainers ?? []), ...w.spec.template.spec.containers]) {
        for (const f of c.envFrom ?? []) expect(configMaps.has(f.configMapRef!.name), f.configMapRef!.name).toBe(true);
      }
    }
  });
});
