// The HTML page's byte formatter (analyzer/html/format.js) on the shared cases
// (tests/shared/byte_sizes.json), which the CLI's and the pytest plugin's formatters pass too.
// Usage: node byte_sizes_test.js [CASES_JSON]. Exit 0 when every case matches.
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const here = __dirname;
const cases = JSON.parse(fs.readFileSync(process.argv[2] || path.join(here, 'byte_sizes.json'), 'utf8'));
const ctx = {};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(path.join(here, '../../analyzer/html/format.js'), 'utf8'), ctx);

let failed = 0;
for (const [bytes, want] of cases.format) {
  for (const [how, arg] of [['string', bytes], ['BigInt', BigInt(bytes)]].concat(
           Number.isSafeInteger(Number(bytes)) ? [['Number', Number(bytes)]] : [])) {
    const got = ctx.fmtBytes(arg);
    if (got !== want) {
      console.log(`FAIL fmtBytes(${how} ${bytes}) = '${got}', want '${want}'`);
      failed++;
    }
  }
}
if (cases.format.length < 10) {
  console.log('FAIL: too few cases read');
  failed++;
}
console.log(failed ? `${failed} failures` : `PASS ${cases.format.length} byte-size cases (format.js)`);
process.exit(failed ? 1 : 0);
