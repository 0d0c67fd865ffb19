export * from './clock.js';
export * from './token-bucket.js';
export * from './item-backoff.js';
export * from './doubling-backoff.js';
