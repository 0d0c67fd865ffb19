import { expect } from 'chai';
import { connectToDriver } from '../../src/source/connect-driver.js';

describe('connectToDriver', function () {
  it('waits for the driver however many tries it takes (no give-up that would turn into a crash loop), reporting each failure', async function () {
    let calls = 0;
    const csi = {
      getPluginInfo: () => (++calls <= 60 ? Promise.reject(new Error('connect EACCES /csi/csi.sock')) : Promise.resolve({ name: 'driver.example.com', vendorVersion: '1', manifest: {} })),
    };
    const retries: number[] = [];
    const info = await connectToDriver(csi, { initialDelayMs: 1, maxDelayMs: 2, onRetry: (err, attempt) => (expect(String(err)).to.contain('EACCES'), retries.push(attempt)) });
    expect(info.name).to.equal('driver.example.com');
    expect(calls).to.equal(61);
    expect(retries).to.deep.equal(Array.from({ length: 60 }, (_, i) => i + 1));
  });

  it('waits on a driver that answers no name, as on one that fails, when no flag gives the name; takes the answer when one does', async function () {
    let calls = 0;
    const csi = { getPluginInfo: () => Promise.resolve({ name: ++calls <= 3 ? '' : 'driver.example.com', vendorVersion: '1', manifest: {} }) };
    const why: string[] = [];
    const info = await connectToDriver(csi, { requireName: true, initialDelayMs: 1, maxDelayMs: 2, onRetry: (err) => why.push(String(err)) });
    expect([info.name, calls]).to.deep.equal(['driver.example.com', 4]);
    expect(why).to.have.length(3);
    expect(why[0]).to.match(/no name .*--driver-name/);
    calls = 0;
    expect((await connectToDriver(csi, { initialDelayMs: 1 })).name).to.equal('');
    expect(calls).to.equal(1);
  });

  it('waits on a driver that answers a name no CSI driver may have (it would go into label values), saying why', async function () {
    let calls = 0;
    const csi = { getPluginInfo: () => Promise.resolve({ name: ++calls <= 2 ? 'Example Driver/v1' : 'driver.example.com', vendorVersion: '1', manifest: {} }) };
    const why: string[] = [];
    const info = await connectToDriver(csi, { requireName: true, initialDelayMs: 1, maxDelayMs: 2, onRetry: (err) => why.push(String(err)) });
    expect([info.name, calls]).to.deep.equal(['driver.example.com', 3]);
    expect(why[0]).to.match(/a name no CSI driver may have: .*--driver-name/);
  });
});
