import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KubeClient } from '@topovol/shared';
import { INSTALL_NAMESPACE } from '@topovol/manifests';
import { controlPlaneBinaries } from './control-plane-binaries.js';
import { freePort } from './free-port.js';
import { httpGet } from './http-get.js';
import { ManagedProcess } from './managed-process.js';

/**
 * Admission that clusters turn on and kube-apiserver leaves off by default, so that the loops'
 * identities meet it in the tests first: the shared integration control plane and the e2e storage
 * stack run with it. OwnerReferencesPermissionEnforcement (on in OpenShift): changing an object's
 * ownerReferences needs delete on the object, and an owner reference with blockOwnerDeletion needs
 * update on the owner's `finalizers` subresource (plugin/pkg/admission/gc).
 */
export const CLUSTER_ADMISSION_FLAGS: readonly string[] = ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'];

export interface ControlPlaneOptions {
  /** Extra kube-apiserver flags, e.g. feature gates. */
  apiServerFlags?: string[];
  /** Keep the temp dir (logs, etcd data) after stop, for debugging. */
  keepDir?: boolean;
}

/**
 * A real etcd + kube-apiserver on loopback (the envtest pattern). Each instance has its own temp
 * dir, ports, certificates and admin identity; stop() always stops both processes.
 */
export class ControlPlane {
  readonly dir: string;
  readonly adminToken = randomBytes(24).toString('hex');
  private etcd?: ManagedProcess;
  private apiServer?: ManagedProcess;
  private etcdPort = 0;
  private etcdPeerPort = 0;
  private apiPort = 0;
  private binaries?: Record<'etcd' | 'kube-apiserver', string>;

  constructor(private readonly opts: ControlPlaneOptions = {}) {
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-cp-'));
  }

  get url(): string {
    return `https://127.0.0.1:${this.apiPort}`;
  }

  get kubeconfigPath(): string {
    return path.join(this.dir, 'kubeconfig');
  }

  get etcdUrl(): string {
    return `http://127.0.0.1:${this.etcdPort}`;
  }

  /** The service-account signing key (PEM), for kube-controller-manager. */
  get serviceAccountKeyFile(): string {
    return path.join(this.dir, 'sa.key');
  }

  /**
   * kube-apiserver's audit log (JSON lines): every request of a ServiceAccount of the install
   * namespace, with the RBAC decision, so tests can show which permissions the loops used.
   */
  get auditLogPath(): string {
    return path.join(this.dir, 'audit.log');
  }

  get caFile(): string {
    return path.join(this.dir, 'certs', 'apiserver.crt');
  }

  async start(): Promise<void> {
    this.binaries = await controlPlaneBinaries(['etcd', 'kube-apiserver']);
    this.writeIdentities();
    await onFreshPorts(
      () => this.startEtcd(),
      (attempt) => {
        this.etcdPort = this.etcdPeerPort = 0;
        rmSync(path.join(this.dir, 'etcd-data'), { recursive: true, force: true });
        setAside(path.join(this.dir, 'etcd.log'), attempt);
      },
    );
    await onFreshPorts(
      () => this.startApiServer(),
      (attempt) => {
        this.apiPort = 0;
        setAside(path.join(this.dir, 'kube-apiserver.log'), attempt);
      },
    );
  }

  private writeIdentities(): void {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(path.join(this.dir, 'sa.key'), privateKey.export({ type: 'pkcs1', format: 'pem' }));
    writeFileSync(path.join(this.dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    // A static token user in system:masters: full access, and exempt from API Priority and Fairness.
    writeFileSync(path.join(this.dir, 'tokens.csv'), `${this.adminToken},topovol-admin,topovol-admin,"system:masters"\n`);
    mkdirSync(path.join(this.dir, 'certs'), { recursive: true });
    writeFileSync(
      path.join(this.dir, 'audit-policy.yaml'),
      [
        'apiVersion: audit.k8s.io/v1',
        'kind: Policy',
        // ResponseStarted stays: a watch's only event until it ends.
        'omitStages: [RequestReceived]',
        'rules:',
        `- level: Metadata`,
        `  userGroups: ["system:serviceaccounts:${INSTALL_NAMESPACE}"]`,
        '- level: None',
        '',
      ].join('\n'),
    );
  }

  private async startEtcd(): Promise<void> {
    // A restart keeps the ports, so kube-apiserver reconnects to the same address.
    if (this.etcdPort === 0) this.etcdPort = await freePort();
    if (this.etcdPeerPort === 0) this.etcdPeerPort = await freePort();
    const peer = `http://127.0.0.1:${this.etcdPeerPort}`;
    this.etcd = new ManagedProcess({
      name: 'etcd',
      command: this.binaries!.etcd,
      logFile: path.join(this.dir, 'etcd.log'),
      args: [
        `--data-dir=${path.join(this.dir, 'etcd-data')}`,
        `--listen-client-urls=${this.etcdUrl}`,
        `--advertise-client-urls=${this.etcdUrl}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=default=${peer}`,
        // Test data is disposable: skip fsync, which dominates etcd latency on small VMs.
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
    });
    await waitFor(`etcd on ${this.etcdUrl}`, this.etcd, 30_000, async () => (await httpGet(`${this.etcdUrl}/health`)).status === 200);
  }

  /** Starts (or restarts) kube-apiserver against the same etcd, certificates and port. */
  async startApiServer(): Promise<void> {
    if (this.apiPort === 0) this.apiPort = await freePort();
    this.apiServer = new ManagedProcess({
      name: 'kube-apiserver',
      command: this.binaries!['kube-apiserver'],
      logFile: path.join(this.dir, 'kube-apiserver.log'),
      args: [
        `--etcd-servers=${this.etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${this.apiPort}`,
        `--cert-dir=${path.join(this.dir, 'certs')}`,
        `--token-auth-file=${path.join(this.dir, 'tokens.csv')}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${path.join(this.dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${path.join(this.dir, 'sa.key')}`,
        '--service-cluster-ip-range=10.0.0.0/24',
        '--authorization-mode=Node,RBAC',
        // v1.37 refuses to advertise loopback through the endpoint reconciler.
        '--endpoint-reconciler-type=none',
        // No serviceaccount controller runs here, so the ServiceAccount admission plugin would reject every pod.
        '--disable-admission-plugins=ServiceAccount',
        '--allow-privileged=true',
        `--audit-policy-file=${path.join(this.dir, 'audit-policy.yaml')}`,
        `--audit-log-path=${this.auditLogPath}`,
        ...(this.opts.apiServerFlags ?? []),
      ],
    });
    await waitFor(`kube-apiserver on ${this.url}`, this.apiServer, 120_000, async () => {
      const res = await httpGet(`${this.url}/readyz`, { token: this.adminToken });
      return res.status === 200;
    });
    await this.checkRequestedVersion();
    this.writeKubeconfig();
  }

  /**
   * A run asked for a release (TOPOVOL_K8S_VERSION, as hack/skew.sh sets it) must be answered by that
   * release: binaries from elsewhere (a KUBEBUILDER_ASSETS left in the environment) would pass it off
   * as tested.
   */
  private async checkRequestedVersion(): Promise<void> {
    const wanted = process.env.TOPOVOL_K8S_VERSION;
    if (!wanted) return;
    const res = await httpGet(`${this.url}/version`, { token: this.adminToken });
    const got = (JSON.parse(res.body) as { gitVersion?: string }).gitVersion;
    if (got !== wanted) throw new Error(`TOPOVOL_K8S_VERSION=${wanted}, but kube-apiserver ${this.binaries!['kube-apiserver']} is ${got ?? 'of no version'}`);
  }

  async stopApiServer(): Promise<void> {
    await this.apiServer?.stop();
  }

  /**
   * Stops etcd (SIGTERM, then SIGKILL after `graceMs`; 0 kills at once) and starts it again on the
   * same data and ports: kube-apiserver keeps running and reconnects, as in an etcd upgrade.
   */
  async restartEtcd(downMs = 0, graceMs = 10_000): Promise<void> {
    if (graceMs === 0) await this.etcd?.kill();
    else await this.etcd?.stop(graceMs);
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.startEtcd();
  }

  /** Kills kube-apiserver and starts a new process on the same etcd and port. */
  async restartApiServer(): Promise<void> {
    await this.stopApiServer();
    await this.startApiServer();
  }

  private writeKubeconfig(): void {
    const ca = readFileSync(this.caFile).toString('base64');
    writeFileSync(
      this.kubeconfigPath,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: topovol-test',
        '  cluster:',
        `    server: ${this.url}`,
        `    certificate-authority-data: ${ca}`,
        'users:',
        '- name: admin',
        '  user:',
        `    token: ${this.adminToken}`,
        'contexts:',
        '- name: admin',
        '  context: { cluster: topovol-test, user: admin }',
        'current-context: admin',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
  }

  /** An unthrottled admin client (system:masters), from the kubeconfig as the manager loads one. */
  adminClient(): KubeClient {
    return KubeClient.load(this.kubeconfigPath, { qps: 0, burst: 1 });
  }

  /** A client acting as any user or ServiceAccount, through impersonation by the admin. */
  clientAs(user: string, groups: string[] = []): KubeClient {
    return this.adminClient().forUser(user, groups);
  }

  /** A client acting as a ServiceAccount (system:serviceaccount:<ns>:<name>). */
  clientAsServiceAccount(namespace: string, name: string): KubeClient {
    return this.clientAs(`system:serviceaccount:${namespace}:${name}`, [
      'system:serviceaccounts',
      `system:serviceaccounts:${namespace}`,
      'system:authenticated',
    ]);
  }

  /** A bound token of a ServiceAccount (TokenRequest), as the kubelet mounts into its pods. */
  async serviceAccountToken(namespace: string, name: string): Promise<string> {
    const review = await this.adminClient().request<{ status?: { token?: string } }>(
      'POST',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`,
      { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 24 * 3600 } } },
    );
    const token = review.status?.token;
    if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
    return token;
  }

  /**
   * A kubeconfig file authenticating as a ServiceAccount with its own token, not through
   * impersonation: what a pod of that ServiceAccount presents. The ServiceAccount must exist.
   */
  async writeServiceAccountKubeconfig(namespace: string, name: string, file: string): Promise<string> {
    const token = await this.serviceAccountToken(namespace, name);
    const text = readFileSync(this.kubeconfigPath, 'utf8').replace(/^(\s+token: ).*$/m, `$1${token}`);
    writeFileSync(file, text, { mode: 0o600 });
    return file;
  }

  /** An unthrottled client authenticated as a ServiceAccount (see writeServiceAccountKubeconfig). */
  async serviceAccountClient(namespace: string, name: string): Promise<KubeClient> {
    const file = await this.writeServiceAccountKubeconfig(namespace, name, path.join(this.dir, `sa-${namespace}-${name}.kubeconfig`));
    return KubeClient.load(file, { qps: 0, burst: 1 });
  }

  async stop(): Promise<void> {
    await this.apiServer?.stop();
    await this.etcd?.stop();
    if (!this.opts.keepDir && !process.env.TOPOVOL_KEEP_TEST_DIRS) rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * freePort's port can be taken before the process binds it: the kernel hands the same ephemeral
 * range to outgoing connections (seen in bench runs, etcd's "bind: address already in use"). On
 * a first start nothing depends on the port yet, so a fresh one is picked and the start retried.
 */
async function onFreshPorts(start: () => Promise<void>, forget: (attempt: number) => void, attempts = 3): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts || !String(err).includes('address already in use')) throw err;
      forget(attempt);
    }
  }
}

/** Keeps a failed attempt's log, out of the way of the next attempt's error (logs are appended to). */
function setAside(log: string, attempt: number): void {
  if (existsSync(log)) renameSync(log, `${log}.attempt-${attempt}`);
}

async function waitFor(what: string, proc: ManagedProcess, timeoutMs: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!proc.running) throw new Error(`${what} exited (code ${String(await proc.waitForExit())}):\n${proc.logTail()}`);
    try {
      if (await ready()) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  await proc.kill();
  throw new Error(`${what} not ready after ${timeoutMs} ms:\n${proc.logTail()}`);
}

