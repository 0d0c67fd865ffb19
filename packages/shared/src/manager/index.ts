export * from './bind-address.js';
export * from './controller-descriptor.js';
export * from './duration.js';
export * from './flag-parser.js';
export * from './flags.js';
export * from './manager.js';
