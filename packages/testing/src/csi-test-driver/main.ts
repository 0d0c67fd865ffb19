#!/usr/bin/env node
// The CSI test driver as a process, for suites that want it outside the test runner:
//   node packages/testing/dist/src/csi-test-driver/main.js --endpoint unix:///tmp/csi.sock \
//     --name test.csi.topovol.dev --topology-key topology.test.csi.topovol.dev/node \
//     --node node-a=100Gi --node node-b [--capacity 50Gi] [--max-volume-size 10Gi]
// Each --node becomes one segment {<topology-key>: <node>} with its own capacity (or --capacity);
// without --node the driver has one segment-less pool of --capacity.
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { parseByteSize } from './byte-size.js';
import { CsiTestDriver } from './csi-test-driver.js';
import type { CsiTestDriverCapacity } from './csi-test-driver.js';

const USAGE = `usage: main.js --endpoint unix:///path.sock [--name NAME] [--vendor-version V]
       [--topology-key KEY] [--node NAME[=SIZE]]... [--capacity SIZE] [--max-volume-size SIZE]`;

export function parseDriverArgs(argv: string[]): { endpoint: string; name: string; vendorVersion: string; capacity: CsiTestDriverCapacity[] } {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      endpoint: { type: 'string' },
      name: { type: 'string', default: 'test.csi.topovol.dev' },
      'vendor-version': { type: 'string', default: '0.1.0' },
      'topology-key': { type: 'string', default: 'topology.test.csi.topovol.dev/node' },
      node: { type: 'string', multiple: true, default: [] },
      capacity: { type: 'string', default: '100Gi' },
      'max-volume-size': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) throw new Error(USAGE);
  if (!values.endpoint) throw new Error(`--endpoint is required\n${USAGE}`);
  const defaultCapacity = parseByteSize(values.capacity);
  const max = values['max-volume-size'] ? parseByteSize(values['max-volume-size']) : undefined;
  const withMax = (c: CsiTestDriverCapacity): CsiTestDriverCapacity => (max === undefined ? c : { ...c, maximumVolumeSize: max });
  const key = values['topology-key'];
  const capacity =
    values.node.length === 0
      ? [withMax({ segment: {}, capacity: defaultCapacity })]
      : values.node.map((spec) => {
          const [node, size] = spec.split('=', 2) as [string, string | undefined];
          if (!node) throw new Error(`bad --node ${JSON.stringify(spec)}\n${USAGE}`);
          return withMax({ segment: { [key]: node }, capacity: size ? parseByteSize(size) : defaultCapacity });
        });
  return { endpoint: values.endpoint, name: values.name, vendorVersion: values['vendor-version'], capacity };
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parseDriverArgs>;
  try {
    args = parseDriverArgs(process.argv.slice(2));
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(2);
  }
  const driver = new CsiTestDriver({ name: args.name, vendorVersion: args.vendorVersion, capacity: args.capacity });
  await driver.start(args.endpoint);
  console.log(`CSI test driver ${args.name} listening on ${driver.endpoint}`);
  const stop = (): void => {
    void driver.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

// Run only as the entry point, so tests can import parseDriverArgs.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  });
}
