#!/usr/bin/env node
// Renders the files derived from code: config/rbac, config/flowcontrol and config/manager from the controller
// descriptors (bin/descriptors.js), docs/reference/flags.md from the flag tables,
// docs/reference/metrics.md from the metrics registry, the Helm chart charts/topovol from the same
// renderers plus config/crd, config/admission and config/prometheus, and dist/install.yaml, which is
// `kubectl kustomize config/default` over the config/ these files make (the pinned kubectl, from
// hack/control-plane-binaries.sh). Needs the built packages (tsc -b).
//   node hack/generate.mjs           write the files (and delete generated files no longer rendered)
//   node hack/generate.mjs --check   write nothing; exit 1 listing every stale, missing or extra file
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configureLogging, EventRecorder, InformerFactory, KubeClient, logger, MANAGER_FLAGS, metricsRegistry, parseManagerFlags, WorkQueue } from '@topovol/shared';
import { describeRegistry, GENERATED_HEADER, renderHelmChart, renderInstallFiles } from '@topovol/manifests';
import { capacityControllerName, descriptors } from '../bin/descriptors.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const GENERATED_DIRS = ['config/rbac', 'config/flowcontrol', 'config/manager', 'docs/reference', 'charts/topovol', 'dist'];
const check = process.argv.includes('--check');

// Some families are created lazily: the work-queue ones with the first queue, and some loops
// register theirs in setup (e.g. the pv-binder's cache collectors). So set every loop up, as the
// manager does, against a client that is never used (no informer is started), and make a queue.
await registerLazyMetrics();

const files = renderInstallFiles({
  descriptors,
  managerFlags: MANAGER_FLAGS,
  metrics: await describeRegistry(metricsRegistry),
  capacityController: capacityControllerName,
});
Object.assign(
  files,
  renderHelmChart({
    descriptors,
    capacityController: capacityControllerName,
    appVersion: JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version,
    configFiles: Object.fromEntries(['config/crd', 'config/admission', 'config/prometheus'].flatMap(filesIn)),
  }),
);
files['dist/install.yaml'] = renderInstallYaml(files);

/** [path, text] of the files directly in dir (relative to the repository root). */
function filesIn(dir) {
  return readdirSync(path.join(root, dir), { withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => [path.posix.join(dir, e.name), readFileSync(path.join(root, dir, e.name), 'utf8')]);
}

/**
 * kubectl kustomize config/default, run on a copy of config/ holding the files rendered above, so
 * --check compares with what config/ is about to be (not with stale files on disk).
 */
function renderInstallYaml(rendered) {
  const lines = execFileSync('bash', [path.join(root, 'hack', 'control-plane-binaries.sh'), 'kubectl'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n');
  const kubectl = path.join(lines[lines.length - 1], 'kubectl');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-install-'));
  try {
    cpSync(path.join(root, 'config'), path.join(dir, 'config'), { recursive: true });
    for (const rel of ['config/rbac', 'config/flowcontrol', 'config/manager'].flatMap(generatedFilesUnder)) rmSync(path.join(dir, rel));
    for (const [rel, content] of Object.entries(rendered)) {
      if (!rel.startsWith('config/')) continue;
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(path.join(dir, rel), content);
    }
    const yaml = execFileSync(kubectl, ['kustomize', path.join(dir, 'config', 'default')], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const version = JSON.parse(execFileSync(kubectl, ['version', '--client', '-o', 'json'], { encoding: 'utf8' })).clientVersion.gitVersion;
    return `# ${GENERATED_HEADER}\n# kubectl kustomize config/default (kubectl ${version}). Install: kubectl apply --server-side -f dist/install.yaml\n${yaml}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function registerLazyMetrics() {
  const queue = new WorkQueue('generate');
  queue.shutDown();
  configureLogging('error', 'text');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-generate-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    'apiVersion: v1\nkind: Config\nclusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: none, user: {}}]\n' +
      'contexts: [{name: none, context: {cluster: none, user: none}}]\ncurrent-context: none\n',
  );
  try {
    const client = KubeClient.load(kubeconfig, { qps: 0, burst: 1 });
    const informers = new InformerFactory(client);
    const options = parseManagerFlags(['--dry-run', '--leader-elect=false'], descriptors.flatMap((d) => d.flags ?? []));
    for (const d of descriptors) {
      const events = new EventRecorder(client, `topovol-${d.name}`, 'generate', true);
      try {
        const controller = await d.setup({ client, informers, events, options, log: logger().child({ controller: d.name }) });
        controller.queue.shutDown();
      } catch {
        // A loop that cannot be set up without its environment (capacity needs --csi-address)
        // still registered what it registers before that; its other families are module-level.
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Files under dir that carry the generated header (others there are hand-written and left alone). */
function generatedFilesUnder(dir) {
  const abs = path.join(root, dir);
  if (!existsSync(abs)) return [];
  const out = [];
  for (const e of readdirSync(abs)) {
    const rel = path.join(dir, e);
    if (statSync(path.join(root, rel)).isDirectory()) out.push(...generatedFilesUnder(rel));
    else if (readFileSync(path.join(root, rel), 'utf8').includes(GENERATED_HEADER)) out.push(rel);
  }
  return out;
}

const problems = [];
for (const [rel, content] of Object.entries(files)) {
  const abs = path.join(root, rel);
  const current = existsSync(abs) ? readFileSync(abs, 'utf8') : undefined;
  if (current === content) continue;
  problems.push(`${current === undefined ? 'missing' : 'stale'}: ${rel}`);
  if (!check) {
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
}
for (const rel of GENERATED_DIRS.flatMap(generatedFilesUnder)) {
  if (rel in files) continue;
  problems.push(`no longer generated: ${rel}`);
  if (!check) rmSync(path.join(root, rel));
}

if (check && problems.length > 0) {
  console.error(`generated files are out of date (run: node hack/generate.mjs):\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.error(check ? `generated files up to date (${Object.keys(files).length})` : `wrote ${problems.length} of ${Object.keys(files).length} generated files`);
// Loaded packages may hold timers (metrics collectors); nothing else is pending.
process.exit(0);
