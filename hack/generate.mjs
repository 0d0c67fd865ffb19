#!/usr/bin/env node
// Renders the files derived from code: config/rbac and config/manager from the controller
// descriptors (bin/descriptors.js), docs/reference/flags.md from the flag tables and
// docs/reference/metrics.md from the metrics registry. Needs the built packages (tsc -b).
//   node hack/generate.mjs           write the files (and delete generated files no longer rendered)
//   node hack/generate.mjs --check   write nothing; exit 1 listing every stale, missing or extra file
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configureLogging, EventRecorder, InformerFactory, KubeClient, logger, MANAGER_FLAGS, metricsRegistry, parseManagerFlags, WorkQueue } from '@topovol/shared';
import { describeRegistry, GENERATED_HEADER, renderInstallFiles } from '../packages/shared/dist/src/manifests/index.js';
import { capacityControllerName, descriptors } from '../bin/descriptors.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const GENERATED_DIRS = ['config/rbac', 'config/manager', 'docs/reference'];
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
