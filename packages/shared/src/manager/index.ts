export * from './controller-descriptor.js';
export * from './duration.js';
export * from './flags.js';
export * from './manager.js';
