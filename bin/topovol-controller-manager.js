#!/usr/bin/env node
// The topovol-controller-manager executable: the shared runtime plus every loop's descriptor.
// Plain JS on purpose (see docs/adr/0002): it runs as `pnpm exec topovol-controller-manager`,
// `node bin/topovol-controller-manager.js` and as the container entry point without a build step
// of its own; the packages it imports are built TypeScript.
import { runManager } from '@topovol/shared';
import { pvBinderDescriptor, zonalPvUpgradeDescriptor } from '@topovol/pv-controller';
import { capacityDescriptor } from '@topovol/capacity-controller';
import { rollbackDescriptor } from '@topovol/rollback-controller';

await runManager(process.argv.slice(2), [pvBinderDescriptor, zonalPvUpgradeDescriptor, capacityDescriptor, rollbackDescriptor]);
