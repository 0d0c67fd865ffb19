import { expect } from 'chai';
import { configureLogging, logger } from '../../src/logging/logger.js';
import type { LogFormat } from '../../src/logging/logger.js';

describe('logger', function () {
  after(() => configureLogging('info', 'json'));

  for (const format of ['json', 'text'] as LogFormat[]) {
    it(`${format}: an entry below the level is dropped before it is formatted (a debug line on a hot path costs no serialization)`, function () {
      configureLogging('info', format);
      let serialized = 0;
      const value = {
        toJSON(): string {
          serialized++;
          return 'x';
        },
      };
      logger().child({ controller: 'c' }).debug('below the level', { value });
      expect(serialized).to.equal(0);
    });
  }
});
