// Loaded with mocha's --require: tests log only errors unless TOPOVOL_TEST_LOG_LEVEL says otherwise,
// so that the runner's summary stays readable.
import { configureLogging } from '@topovol/shared';
import type { LogLevel } from '@topovol/shared';

configureLogging((process.env.TOPOVOL_TEST_LOG_LEVEL as LogLevel | undefined) ?? 'error', 'json');
