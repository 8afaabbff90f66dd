// Formatting for people: sizes (as the text report words them), times, shares, frame labels,
// and stable colours per module or site.
'use strict';

// Sizes exactly as the CLI writes them (common/byte_size.h; the same cases are checked here by
// tests/shared/byte_sizes_test.js): below 1 KiB "N B", else three significant digits in the
// largest binary unit reached, "1.50 GiB", "12.0 KiB", "512 MiB", rounded half to even on the
// exact value. BigInt arithmetic, so the rounding is exact; a Number is rounded to whole bytes
// first (the page's means and axis ticks), a negative or non-number one counts as 0.
// Who allocated a group (its "threads", as the text report's threads_words says it):
// "thread 4242 (worker-7)", "3 threads: 4242 (worker-7) 200 MiB, ..."; with atSite (growth), also
// "(1 of the 32 threads that allocated there)".
function threadsText(threads, atSite) {
  if (!threads || !threads.length) return '';
  const one = (t) => String(t.tid) + (t.name ? ' (' + t.name + ')' : '');
  let s = threads.length === 1 ? 'thread ' + one(threads[0]) :
    threads.length + ' threads: ' + threads.slice(0, 3).map((t) => one(t) + ' ' + fmtBytes(t.bytes)).join(', ') + (threads.length > 3 ? ', ...' : '');
  if (atSite && atSite > threads.length) s += ' (' + threads.length + ' of the ' + atSite + ' threads that allocated there)';
  return s;
}

function fmtBytes(b) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let n = 0n;
  if (typeof b === 'bigint') n = b > 0n ? b : 0n;
  else if (typeof b === 'string' && /^[0-9]+$/.test(b)) n = BigInt(b);
  else {
    const v = Number(b);
    n = Number.isFinite(v) && v > 0 ? BigInt(Math.round(v)) : 0n;
  }
  if (n < 1024n) return n + ' B';
  let u = 1;
  while (u < 5 && (n >> BigInt(10 * (u + 1))) !== 0n) u++;
  const div = 1n << BigInt(10 * u);
  const decimals = n >= 100n * div ? 0 : n >= 10n * div ? 1 : 2;
  const scale = [1n, 10n, 100n][decimals];
  let q = (n * scale) / div;
  const r = (n * scale) % div;
  if (2n * r > div || (2n * r === div && (q & 1n) === 1n)) q++;  // half to even
  let text = (q / scale).toString();
  if (decimals) text += '.' + (q % scale).toString().padStart(decimals, '0');
  return text + ' ' + units[u];
}
function fmtPct(x) {
  const p = (Number(x) || 0) * 100;
  return (p > 0 && p < 1 ? p.toFixed(1) : p.toFixed(0)) + '%';
}
// Times are ns from the trace start.
function fmtSecs(ns) {
  const s = (Number(ns) || 0) / 1e9;
  const a = Math.abs(s);
  return (a >= 100 ? s.toFixed(1) : a >= 1 ? s.toFixed(3) : a >= 0.001 ? s.toFixed(4) : s.toFixed(6)) + ' s';
}
function fmtCount(n) {
  return Number(n || 0).toLocaleString('en-US');
}
function plural(n, word) {
  return fmtCount(n) + ' ' + word + (Number(n) === 1 ? '' : 's');
}
function basename(p) {
  const i = String(p || '').lastIndexOf('/');
  return i < 0 ? String(p || '') : p.slice(i + 1);
}

// Frames are the report's: {function, file, line, module, python, offset (native), inlined?}.
// "file:line", or "module+0xoffset" when the source is unknown.
function frameWhere(f) {
  if (f.file) return f.file + (f.line > 0 ? ':' + f.line : '');
  if (f.python) return '';
  return basename(f.module) + '+0x' + Number(f.offset || 0).toString(16);
}
function frameName(f) {
  return (f.python ? 'py: ' : '') + (f.function || '??') + (f.inlined ? ' (inlined)' : '');
}
// A C++ name without its parameter list and anonymous namespaces, for one-line labels (the
// full name is in tooltips and stacks): "(anonymous namespace)::emit(Worker&, Event&)" -> "emit".
function shortFn(fn) {
  const s = String(fn || '??').replace(/\(anonymous namespace\)::/g, '');
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '<' || c === '{') depth++;
    else if ((c === '>' || c === '}') && depth > 0) depth--;
    else if (c === '(' && depth === 0 && i > 0) {
      if (s.endsWith('operator', i) && s[i + 1] === ')') {
        i++;  // operator()
        continue;
      }
      return s.slice(0, i);
    }
  }
  return s;
}
function frameShort(f) {
  const w = f.file ? basename(f.file) + (f.line > 0 ? ':' + f.line : '') : frameWhere(f);
  return (f.python ? 'py: ' : '') + shortFn(f.function) + (f.inlined ? ' (inlined)' : '') + (w ? '  ' + w : '');
}

// The frame that names an allocation site in one line: the innermost Python frame of the user's
// own code (not an installed library's or the standard library's: `library`, as the text report's
// one-line answers do), else the innermost Python frame, else the innermost resolved frame outside
// system libraries and the CUDA runtime (the program's own call), else the innermost frame.
const SYSTEM_MODULE = /^\/(usr\/)?lib(64|32)?\/|\/libcudart[^/]*$/;
function siteFrame(stack) {
  if (!stack.length) return null;
  return stack.find((f) => f.python && !f.library) || stack.find((f) => f.python) ||
      stack.find((f) => f.function && f.function !== '??' && !SYSTEM_MODULE.test(f.module || '')) || stack[0];
}
function siteLabel(stack) {
  const f = siteFrame(stack || []);
  return f ? frameShort(f) : '(no stack recorded)';
}
// Labels for several sites side by side: where two would read the same (a shared helper
// called from different places), the callers are added until they differ (up to 3).
function siteLabels(stacks) {
  stacks = stacks.map((st) => st || []);
  const starts = stacks.map((st) => Math.max(0, st.indexOf(siteFrame(st))));
  const labels = stacks.map(siteLabel);
  for (let depth = 1; depth <= 3; depth++) {
    const seen = new Map();
    labels.forEach((l) => seen.set(l, (seen.get(l) || 0) + 1));
    if ([...seen.values()].every((n) => n === 1)) break;
    labels.forEach((l, i) => {
      const caller = stacks[i][starts[i] + depth];
      if (seen.get(l) > 1 && caller) labels[i] = l + ' \u2190 ' + shortFn(caller.function);
    });
  }
  return labels;
}

// Stable colours: a hash of the text picks the hue.
function hashHue(text) {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0) % 360;
}
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f',
  '#86bcb6', '#d37295', '#a0cbe8'];
function siteColor(i) {
  return PALETTE[i % PALETTE.length];
}
// Icicle colours: warm for native code, by module; cool for Python; grey for "other".
function frameColor(f) {
  if (!f) return '#c9c9c9';
  const fn = f.function || '';
  if (f.python) return 'hsl(' + (190 + hashHue(f.file || fn) % 50) + ',55%,68%)';
  const hue = 10 + (hashHue(basename(f.module) || f.file || '') * 7 + hashHue(fn)) % 45;
  return 'hsl(' + hue + ',75%,' + (60 + hashHue(fn) % 14) + '%)';
}

// VERDICT_TEXT (code -> label) is written into the page ahead of these scripts from the verdict
// table (analyzer/judge/verdicts.cpp), the one place a verdict is defined.
function verdictText(code) {
  return VERDICT_TEXT[code] || code || '';
}
