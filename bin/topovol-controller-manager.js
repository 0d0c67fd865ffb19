#!/usr/bin/env node
// The topovol-controller-manager executable: the shared runtime plus every loop's descriptor.
// Plain JS on purpose (see docs/adr/0002): it runs as `pnpm exec topovol-controller-manager`,
// `node bin/topovol-controller-manager.js` and as the container entry point without a build step
// of its own; the packages it imports are built TypeScript. The descriptor list is in
// descriptors.js, which hack/generate.mjs renders config/ from.
import { runManager } from '@topovol/shared';
import { descriptors } from './descriptors.js';

await runManager(process.argv.slice(2), descriptors);
