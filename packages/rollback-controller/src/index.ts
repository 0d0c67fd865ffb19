export { rollbackDescriptor } from './rollback-descriptor.js';
export { setupRollback } from './rollback/rollback-controller.js';
export { rollbackFlags } from './rollback/rollback-flags.js';
export { decideMark } from './rollback/decide-mark.js';
export { decideRollback } from './rollback/decide-rollback.js';
export * from './rollback/marks.js';
