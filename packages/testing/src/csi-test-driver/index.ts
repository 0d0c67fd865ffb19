// @topovol/testing/csi-test-driver: Topovol's CSI driver for tests, and the pinned CSI sidecars.
export { CsiTestDriver, POOL_PARAMETER } from './csi-test-driver.js';
export type { CsiTestDriverCapacity, CsiTestDriverOptions, TestDriverVolume } from './csi-test-driver.js';
export { CapacityModel, segmentsOverlap } from './capacity-model.js';
export type { CapacityEntry } from './capacity-model.js';
export { CSI_METHODS, FailureInjector } from './failure-injector.js';
export type { CsiMethodName, InjectedFailure } from './failure-injector.js';
export { GiB, parseByteSize } from './byte-size.js';
export type { CsiTestDriverNode } from './node-service.js';
export { parseDriverArgs } from './main.js';
export { csiBinaries } from '../csi-binaries.js';
export type { CsiComponent } from '../csi-binaries.js';
