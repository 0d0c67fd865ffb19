// Writes docs/benchmarks.md from the recorded runs; run through hack/bench/benchmarks-doc.sh.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '@topovol/testing';
import { renderBenchmarksDoc } from './benchmarks-doc.js';

writeFileSync(path.join(repoRoot(), 'docs', 'benchmarks.md'), renderBenchmarksDoc(repoRoot()));
process.stdout.write('docs/benchmarks.md written\n');
