import { expect } from 'chai';
import { parsePrometheusText } from '../../src/prometheus-text.js';

describe('testing: Prometheus text format', function () {
  it('reads samples with and without labels, escaped values and timestamps, skipping comments', function () {
    const text = [
      '# HELP pv_collector_total_pv_count Gauge measuring total number of persistent volumes',
      '# TYPE pv_collector_total_pv_count gauge',
      'pv_collector_total_pv_count{plugin_name="N/A",volume_mode="Filesystem"} 3',
      'retroactive_storageclass_total 0',
      'x{a="say \\"hi\\"",b="back\\\\slash",c="two\\nlines",} 1.5 1700000000000',
      'h_bucket{le="+Inf"} +Inf',
      '',
    ].join('\n');
    expect(parsePrometheusText(text)).to.deep.equal([
      { name: 'pv_collector_total_pv_count', labels: { plugin_name: 'N/A', volume_mode: 'Filesystem' }, value: 3 },
      { name: 'retroactive_storageclass_total', labels: {}, value: 0 },
      { name: 'x', labels: { a: 'say "hi"', b: 'back\\slash', c: 'two\nlines' }, value: 1.5 },
      { name: 'h_bucket', labels: { le: '+Inf' }, value: Infinity },
    ]);
  });

  it('reads CRLF line ends, indented comments, an empty label set, NaN (prom-client writes "Nan") and negative infinity', function () {
    expect(parsePrometheusText('  # HELP m x\r\nm{} 2 \r\nn NaN\r\nl Nan\r\no{a="1" , b = "2"} -Inf\r\n')).to.deep.equal([
      { name: 'm', labels: {}, value: 2 },
      { name: 'n', labels: {}, value: NaN },
      { name: 'l', labels: {}, value: NaN },
      { name: 'o', labels: { a: '1', b: '2' }, value: -Infinity },
    ]);
  });

  it('refuses a line it cannot read, so that a format change is not taken for "no series"', function () {
    for (const [line, why] of [
      ['not a sample line at all {', /not a Prometheus sample/],
      ['m{a=unquoted} 1', /unreadable labels/],
      ['m{a="x"b="y"} 1', /unreadable labels/],
      ['m{a="x",a="y"} 1', /label a twice/],
      ['m garbage', /not a sample value/],
      ['m 0x10', /not a sample value/],
      ['m 1 soon', /not a timestamp/],
    ] as const) {
      expect(() => parsePrometheusText(line), line).to.throw(why);
    }
  });
});
