import { expect } from 'chai';
import { spawn } from 'node:child_process';

// A child process logs through the shared logger to a stderr pipe whose reader stops reading and
// closes it (a container runtime's log pipe gone): its writes fail with EPIPE. It must go on.
describe('logging when stderr is gone', function () {
  it('a broken stderr pipe does not end the process', async function () {
    const logger = new URL('../../src/logging/logger.js', import.meta.url).href;
    const script = `
      const { logger } = await import(${JSON.stringify(logger)});
      let n = 0;
      const t = setInterval(() => {
        logger().info('line ' + n + ' ' + 'x'.repeat(2000));
        if (++n === 60) { clearInterval(t); process.stdout.write('survived'); }
      }, 5);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    // Read the first line, then close the reading end.
    child.stderr.once('data', () => child.stderr.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect({ code, out }).to.deep.equal({ code: 0, out: 'survived' });
  });
});
