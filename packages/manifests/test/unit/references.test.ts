import { expect } from 'chai';
import { Registry, Counter } from 'prom-client';
import { describeRegistry, formatFlagDefault, renderFlagsReference, renderMetricsReference } from '../../src/index.js';
import { MANAGER_FLAGS } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';
import { fakeDescriptor } from './fake-descriptors.js';

describe('manifests: generated references (docs/reference)', function () {
  const cases: [FlagSpec, string][] = [
    [{ name: 'a', type: 'duration', default: 90_000, help: '' }, '1m30s'],
    [{ name: 'b', type: 'stringList', default: ['*', '-x'], help: '' }, '*,-x'],
    [{ name: 'c', type: 'bool', default: false, help: '' }, 'false'],
    [{ name: 'd', type: 'float', default: 2.5, help: '' }, '2.5'],
    [{ name: 'e', type: 'string', default: '', help: '' }, ''],
  ];
  for (const [spec, want] of cases) it(`formats a ${spec.type} default as typed on the command line: "${want}"`, () => expect(formatFlagDefault(spec)).to.equal(want));

  it('flags.md lists every manager flag and every loop flag with default and help', function () {
    const own: FlagSpec = { name: 'grace', type: 'duration', default: 600_000, help: 'How long | before.' };
    const md = renderFlagsReference(MANAGER_FLAGS, [fakeDescriptor('a', [], {}, [own]), fakeDescriptor('b', [], { disabledByDefault: true })]);
    for (const f of MANAGER_FLAGS) expect(md).to.contain(`| \`--${f.name}\` | ${f.type} |`);
    expect(md).to.contain('| `--grace` | duration | `10m0s` | How long \\| before. |');
    expect(md).to.contain('## b');
    expect(md).to.contain('Not started by `*`');
  });

  it('metrics.md lists name, type, labels and help of each family, not the process defaults', async function () {
    const reg = new Registry();
    new Counter({ name: 'workqueue_adds_total', help: 'Adds.', labelNames: ['name'], registers: [reg] });
    new Counter({ name: 'topovol_things_total', help: 'Things.', labelNames: ['a', 'b'], registers: [reg] });
    new Counter({ name: 'process_cpu_seconds_total', help: 'CPU.', registers: [reg] });
    const infos = await describeRegistry(reg);
    expect(infos).to.deep.equal([
      { name: 'topovol_things_total', type: 'counter', help: 'Things.', labelNames: ['a', 'b'] },
      { name: 'workqueue_adds_total', type: 'counter', help: 'Adds.', labelNames: ['name'] },
    ]);
    const md = renderMetricsReference(infos);
    expect(md).to.contain('| `topovol_things_total` | counter | `a`, `b` |  | Things. |');
    expect(md).to.contain('| `workqueue_adds_total` | counter | `name` | client-go workqueue | Adds. |');
  });
});
