// The HTML page's one-line site labels (analyzer/html/format.js siteLabel) name the user's own
// Python line, as the text report's one-line answers do: not an installed library's frame
// (`library`) nor the standard library's, when the user's frame is there; a library's frame when
// it is all there is; native frames when no Python frame is. Usage: node site_label_test.js
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const ctx = {};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(path.join(__dirname, '../../analyzer/html/format.js'), 'utf8'), ctx);

const torch = {function: 'Tensor.__init__', file: '/usr/lib/python3/dist-packages/torch/_tensor.py', line: 18, python: true, library: true};
const linear = {function: 'Linear.forward', file: '/x/site-packages/torch/nn/modules/linear.py', line: 125, python: true, library: true};
const user = {function: 'forward', file: '/home/me/train_leak.py', line: 6, python: true};
const native = {function: 'at::empty_cuda', module: '/x/libtorch_cuda.so', python: false};
const cases = [
  [[native, torch, linear, user], 'py: forward  train_leak.py:6'],
  [[native, torch, linear], 'py: Tensor.__init__  _tensor.py:18'],
  [[native], 'at::empty_cuda  libtorch_cuda.so'],
];
let failed = 0;
for (const [stack, want] of cases) {
  const got = ctx.siteLabel(stack);
  if (!got.startsWith(want)) {
    console.log(`FAIL siteLabel(${stack.map((f) => f.function).join(' <- ')}) = '${got}', want '${want}'`);
    failed++;
  }
}
console.log(failed ? `${failed} failures` : `PASS ${cases.length} site labels (format.js)`);
process.exit(failed ? 1 : 0);
