// The HTML page's logic on PyTorch runs (issue 37), without a browser: the page's scripts
// (analyzer/html/*.js) loaded into node with a stub window. Each case is a defect a user saw:
//  - the tensor timeline at an OOM shows PyTorch's allocated at the failure (the OOM's own view),
//    not the high of the time bucket around it; the peak likewise, and a pointer near either
//    names it;
//  - the flame graph in "user frames" shows the user's own frames only: no interpreter, ctypes,
//    libffi or installed-library rows;
//  - with several OOMs the last (the one the program ended with) comes first, with its true
//    number when the page's limit left OOMs out between;
//  - PyTorch's cache flushes (num_alloc_retries) are counted as the text report counts them;
//  - a driver reading taken away from the moment says so, with how much tracked memory changed;
//    an NVML that cannot see the process is said; PyTorch's pinned host cache is not a leak;
//  - a leak or growth names its threads as the text report does.
// Usage: node torch_page_test.js
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

// A DOM just large enough for el(): nodes with children and text.
class Node {
  constructor(tag) { this.tag = tag; this.children = []; this.attrs = {}; }
  appendChild(c) { this.children.push(c); return c; }
  setAttribute(k, v) { this.attrs[k] = v; }
  addEventListener() {}
  get textContent() { return this.text !== undefined ? this.text : this.children.map((c) => c.textContent).join(''); }
}
const document = {
  createElement: (tag) => new Node(tag),
  createElementNS: (ns, tag) => new Node(tag),
  createTextNode: (text) => Object.assign(new Node('#text'), {text}),
};
const ctx = {window: {addEventListener() {}}, document, Node, console};
vm.createContext(ctx);
// The page writes the verdict labels ahead of its scripts (report_html.cpp); these cases need none.
vm.runInContext('const VERDICT_TEXT = {};', ctx);
for (const f of ['core.js', 'format.js', 'timeline.js', 'icicle.js', 'tables.js', 'torch.js', 'sections.js'])
  vm.runInContext(fs.readFileSync(path.join(__dirname, '../../analyzer/html', f), 'utf8'), ctx, {filename: f});
vm.runInContext('VT.data = {omitted: {}};', ctx);

let failed = 0, passed = 0;
function check(what, got, want) {
  const a = JSON.stringify(got), b = JSON.stringify(want);
  if (a === b) {
    passed++;
  } else {
    console.log(`FAIL ${what}: got ${a}, want ${b}`);
    failed++;
  }
}
const MiB = 1 << 20;
function traceCtx(report) {
  return vm.runInContext('traceContext', ctx)(report, '', 0);
}

// ---- the tensor timeline: exact at the peak and at each OOM --------------------------------
{
  // Buckets' highs at 100, 200 and 400 ns; in the second bucket the run reached 1.34 GiB (its
  // high, at 200) and then failed at 250 with 684 MiB allocated (a caught OOM); the peak at 200.
  const A = 'train.py:10 in step', B = 'train.py:20 in step';
  const device = {
    device: 0, peak_allocated_t_ns: 200,
    at_peak: {t_ns: 200, figures: {allocated_bytes: 1372 * MiB}, holders: [{line: A, bytes: 1000 * MiB}, {line: B, bytes: 372 * MiB}]},
    tensor_timeline: {t_ns: [100, 200, 400], lines: [{line: A, values: [500 * MiB, 1000 * MiB, 600 * MiB]},
      {line: B, values: [0, 372 * MiB, 84 * MiB]}], other: [0, 0, 0]},
  };
  const oom = {device: 0, t_ns: 250, torch: {device: 0, t_ns: 250, allocated_bytes: 684 * MiB,
    at_oom: {t_ns: 250, figures: {allocated_bytes: 684 * MiB},
      holders: [{line: A, bytes: 600 * MiB}, {line: 'lib.py:3 in f', bytes: 50 * MiB}]}}};
  const report = {trace: {first_t_ns: 0, start_monotonic_ns: 0}, ooms: [oom]};
  const c = traceCtx(report);
  const {lines, states} = ctx.tensorStates(c, device);
  check('tensor lines', lines, [A, B]);
  check('states in time order', states.map((s) => [s.t, s.kind]), [[100, 'bucket'], [200, 'peak'], [250, 'oom'], [400, 'bucket']]);
  const atOom = states[2];
  check("the state at the OOM is PyTorch's allocated then", atOom.total, 684 * MiB);
  check('its lines: the view\'s, the rest in "other"', [atOom.v, atOom.other], [[600 * MiB, 0], 84 * MiB]);
  check('the peak is the bucket point of its instant, with every line', [states[1].total, states[1].v], [1372 * MiB, [1000 * MiB, 372 * MiB]]);
  // A pointer 5 units after the OOM (closer to the next bucket point than to the peak) names the OOM.
  const xs = [0, 100, 150, 400];
  check('a pointer near the OOM names the OOM', ctx.tensorStateAt(xs, states, 155, 8), 2);
  check('a pointer far from the markers names the nearest point', ctx.tensorStateAt(xs, states, 330, 8), 3);
  check('the words for the OOM state', ctx.tensorStateWhat(c, atOom).startsWith('at OOM #1'), true);
  // The peak and an OOM a pixel apart (a run that fails right at its peak): the OOM.
  check('an OOM and the peak under the pointer: the OOM', ctx.tensorStateAt([0, 100, 101, 400], states, 100, 8), 2);
}

// ---- cache flushes: PyTorch's retries, as the text report counts them -------------------------
{
  // A retry that worked (a flush the analysis recognised), a caught OOM whose flush freed nothing
  // (two failed cudaMalloc calls, no free between), a fatal OOM whose flush freed a segment (a
  // flush whose retry failed), and an OOM of a memory fraction (no driver call).
  const report = {trace: {}, fragmentation: {cache_flushes: [
    {t_ns: 10, requested_bytes: 4 * MiB, freed_bytes: 20 * MiB, freed_count: 1, retry_succeeded: true},
    {t_ns: 30, requested_bytes: 8 * MiB, freed_bytes: 2 * MiB, freed_count: 1, retry_succeeded: false}]},
  ooms: [{t_ns: 20, requested_bytes: 6 * MiB, torch: {driver_attempts: 2}}, {t_ns: 31, requested_bytes: 8 * MiB, torch: {driver_attempts: 2}},
    {t_ns: 40, requested_bytes: 512, torch: {driver_attempts: 0}}]};
  const rows = ctx.cacheFlushes(traceCtx(report));
  check('every retry is a flush (num_alloc_retries: 4)', rows.map((r) => [r.t_ns, r.freed_bytes, r.retry_succeeded, r.oom]),
      [[10, 20 * MiB, true, undefined], [20, 0, false, 0], [30, 2 * MiB, false, 1], [40, null, false, 2]]);
  check('no PyTorch OOM, no flush of its own', ctx.cacheFlushes(traceCtx({trace: {}, fragmentation: {cache_flushes: []},
    ooms: [{t_ns: 5, requested_bytes: 1}]})).length, 0);
}

// ---- the flame graph's user frames -----------------------------------------------------------
{
  const py = (fn, file, library) => ({function: fn, file, line: 1, module: 'python', python: true, library: library || undefined});
  const nat = (fn, module, machinery) => ({function: fn, module, offset: 16, python: false, machinery: machinery || undefined});
  // Innermost first, as the report writes stacks: the allocator, torch's dispatcher, the
  // interpreter, ctypes and libffi, a library's Python frames, then the user's.
  const stack = [nat('c10::cuda::CUDACachingAllocator::malloc', '/x/libc10_cuda.so'), nat('at::_ops::empty::call', '/x/libtorch_cpu.so', true),
    nat('_PyEval_EvalFrameDefault', '/usr/bin/python3.13', true), nat('ffi_call_unix64', '/x/libffi.so.8', true),
    nat('_ctypes_callproc', '/x/_ctypes.so', true), py('Linear.forward', '/x/dist-packages/torch/nn/modules/linear.py', true),
    py('Module._call_impl', '/x/dist-packages/torch/nn/modules/module.py', true), py('step', '/home/me/train.py'),
    py('<module>', '/home/me/train.py'), nat('_start', '/usr/bin/python3.13', true)];
  check('user frames: the user\'s Python frames only', ctx.icicleFrames(stack, false).map((f) => f.function), ['step', '<module>']);
  check('all frames: every frame', ctx.icicleFrames(stack, true).length, stack.length);
  const libOnly = stack.filter((f) => !f.python || f.library);
  check('a stack with no user Python frame: its Python frames', ctx.icicleFrames(libOnly, false).map((f) => f.function),
      ['Linear.forward', 'Module._call_impl']);
  const native = stack.filter((f) => !f.python);
  check('a native stack: the frames that are not machinery', ctx.icicleFrames(native, false).map((f) => f.function),
      ['c10::cuda::CUDACachingAllocator::malloc']);
  const peak = {device: 0, bytes: 300, live_set: [{bytes: 200, stack}, {bytes: 100, stack: stack.slice(0, 8)}]};
  const c = traceCtx({trace: {}, ooms: []});
  const user = ctx.icicleTree(c, peak, '/peak/by_device/0/live_set', false, false);
  check('the user-frames flame graph: one row per user frame', user.maxDepth, 2);
  check('... whose rows are the user\'s', user.root.kids.map((k) => k.label), ['py: <module>  train.py:1', 'py: step  train.py:1']);
  check('the all-frames flame graph: one row per frame', ctx.icicleTree(c, peak, '/peak/by_device/0/live_set', false, true).maxDepth, stack.length);
}

// ---- several OOMs: the last first --------------------------------------------------------------
{
  check('three OOMs: the last, then the first two', ctx.oomOrder(3), [2, 0, 1]);
  check('one OOM', ctx.oomOrder(1), [0]);
  const ooms = new Array(50).fill(0).map((_, i) => ({t_ns: i}));
  vm.runInContext('VT.data = {omitted: {"/ooms": {entries: 450}}};', ctx);
  const c = traceCtx({trace: {}, ooms});
  check('the page\'s last OOM is the trace\'s last', [ctx.oomNumber(c, 48), ctx.oomNumber(c, 49)], [49, 500]);
  vm.runInContext('VT.data = {omitted: {}};', ctx);
}

// ---- driver readings, NVML, the pinned host cache, threads --------------------------------------
{
  const text = (nodes) => [].concat(nodes).filter((n) => n).map((n) => n.textContent).join(' ');
  const f = {at_instant: false, offset_ns: -209800000, tracked_change_bytes: 1008 * MiB, used_bytes: 512 * MiB,
    total_bytes: 16384 * MiB, tracked_by_kind: {}, tracked_bytes: 0, unexplained_bytes: 0, unexplained_share: 0};
  const away = text(ctx.fidelityBlock(f));
  check('a reading away from the moment says so, and how much tracked memory changed',
      [away.includes('no driver reading at this moment'), away.includes('changed by +1008 MiB')], [true, true]);
  check('a reading at the moment says nothing of the kind', text(ctx.fidelityBlock(Object.assign({}, f, {at_instant: true}))).includes('nearest'), false);
  check('one thread', ctx.threadsText([{tid: 4242, name: 'worker-7', bytes: 3}], 32),
      'thread 4242 (worker-7) (1 of the 32 threads that allocated there)');
  check('several threads, the biggest three', ctx.threadsText([{tid: 1, name: 'main', bytes: 4 * MiB}, {tid: 2, name: '', bytes: 2 * MiB},
    {tid: 3, name: '', bytes: MiB}, {tid: 4, name: '', bytes: 1}]), '4 threads: 1 (main) 4.00 MiB, 2 2.00 MiB, 3 1.00 MiB, ...');
  const c = traceCtx({trace: {}, ooms: [], leaks: {bytes: 0, count: 0, end: 'clean_exit', groups: [], growth: [],
    teardown: {bytes: 0, count: 0, groups: []}, pytorch_host_cache: {bytes: 64 * MiB, count: 3}, growth_pytorch_segments_not_listed: 2}});
  const leaks = text(ctx.leaksSection(c));
  check('the pinned host cache is said apart from the leaks', leaks.includes('pinned host memory cache') && leaks.includes('64.0 MiB'), true);
  check('PyTorch\'s segments left out of the growth are said', leaks.includes('Not listed: 2 call sites of PyTorch'), true);
}

console.log(failed ? `${failed} failures, ${passed} passed` : `PASS ${passed} checks (tensor states, user frames, OOM order, cache flushes)`);
process.exit(failed ? 1 : 0);
