import { expect } from 'chai';
import { configureLogging, logger, textLine } from '../../src/logging/logger.js';
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

  it('text: a message with a newline (a field named message, appended by winston, quoting a tenant\'s string) stays on one line', function () {
    const line = textLine({ level: 'info', message: 'marking volume used marked used for good: node a\n2026-11-30T00:00:00Z ERROR forged', timestamp: 't', volume: 'pv1' });
    expect(line.split('\n')).to.have.length(1);
    expect(line).to.equal('t INFO  "marking volume used marked used for good: node a\\n2026-11-30T00:00:00Z ERROR forged" volume="pv1"');
    expect(textLine({ level: 'warn', message: 'plain', timestamp: 't' })).to.equal('t WARN  plain');
  });
});
