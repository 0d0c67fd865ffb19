export * from './manifest.js';
export * from './rbac-rules.js';
export * from './rbac-objects.js';
export * from './workloads.js';
export * from './flags-reference.js';
export * from './metrics-reference.js';
export * from './install-files.js';
