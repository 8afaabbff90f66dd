// The page's foundations: the error hook, the embedded data, and DOM builders. Every text from
// the trace enters the DOM through text nodes or setAttribute, never as markup.
'use strict';

// Errors land in the page (for the person, and for tests/html/browser_test.sh, which reads the
// DOM after the script ran): body[data-vt-status] becomes "error" and #vt-errors lists them.
const vtErrors = [];
function vtFail(msg) {
  vtErrors.push(String(msg));
  const box = document.getElementById('vt-errors');
  if (box) {
    box.hidden = false;
    box.textContent = 'Report script error (please report it):\n' + vtErrors.join('\n');
  }
  document.body.setAttribute('data-vt-status', 'error');
}
window.addEventListener('error', (e) => vtFail((e.message || 'error') + ' at ' + (e.lineno || '?') + ':' + (e.colno || '?')));
window.addEventListener('unhandledrejection', (e) => vtFail('unhandled rejection: ' + e.reason));

const SVGNS = 'http://www.w3.org/2000/svg';

// el('div', {class: 'x', title: t}, child, 'text', ...): strings become text nodes; null and
// false children are skipped; arrays are flattened.
function build(node, attrs, children) {
  if (attrs) {
    for (const k of Object.keys(attrs)) {
      const v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      // Handlers only as functions: an on* attribute would be code built from a string.
      if (k.startsWith('on')) {
        if (typeof v === 'function') node.addEventListener(k.slice(2), v);
      } else {
        node.setAttribute(k, String(v));
      }
    }
  }
  const add = (c) => {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) c.forEach(add);
    else if (c instanceof Node) node.appendChild(c);
    else node.appendChild(document.createTextNode(String(c)));
  };
  children.forEach(add);
  return node;
}
function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}
function svgEl(tag, attrs, ...children) {
  return build(document.createElementNS(SVGNS, tag), attrs, children);
}
function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// The embedded data is the report JSON (docs/report-schema.md, "The HTML page's data"): one
// trace's report ({schema, trace, peak, leaks, ooms, ...}) or a job's ({schema, job, ranks,
// problems, reports}), with the page's limits applied; `omitted` says what they cut, by the JSON
// pointer of the list that was cut.
const VT = {data: null};
function loadData() {
  const node = document.getElementById('vt-data');
  return JSON.parse(node.textContent);
}
// The frames a person reads first (the text report's rule, analyzer/read/user_frames.h): the Python
// frames when there are any, else those not marked `machinery` in the report JSON; a stack that
// would show nothing is shown whole.
function userFrames(stack) {
  const python = stack.some((f) => f.python);
  const shown = stack.filter((f) => (python ? f.python : !f.machinery));
  return shown.length ? shown : stack;
}
// The page's frames switch (main.js): the user's frames (the default) or every frame. Stack lists
// follow it by a class on body; what is drawn from stacks (the flame graph) registers a listener
// to be built again.
const frameMode = {all: false, listeners: []};
function isJob(data) {
  return Object.prototype.hasOwnProperty.call(data, 'job');
}

// One trace's report as the sections read it: `r` the report, `index` its number on the page
// (element ids), `rel` its times made relative to the trace start (the text report's origin: the
// process start when it precedes the first event), and `omitted(path)` what the page's limits cut
// from the list at `path` inside this report (null when nothing).
function traceContext(report, pointer, index) {
  const t = report.trace;
  const start = Number(t.start_monotonic_ns) || 0, first = Number(t.first_t_ns) || 0;
  const base = start && start < first ? start : first;
  return {
    r: report,
    index,
    rel: (ns) => (Number(ns) || 0) - base,
    omitted: (path) => (VT.data.omitted || {})[pointer + path] || null,
    // The wall-clock time of the trace start, ms since the epoch (0 when unknown).
    wallMs: t.start_realtime_ns && start ? (Number(t.start_realtime_ns) + (base - start)) / 1e6 : 0,
  };
}
// How many entries the page's limits cut from a list (0 when none).
function omittedEntries(ctx, path) {
  const o = ctx.omitted(path);
  return o ? Number(o.entries) || 0 : 0;
}

// One shared tooltip. lines: [[label, value], ...] or strings.
const tip = {
  node: null,
  show(ev, title, lines) {
    if (!this.node) this.node = document.getElementById('vt-tip');
    const t = clear(this.node);
    t.appendChild(el('div', {class: 'tip-title'}, title));
    for (const l of lines || []) {
      if (Array.isArray(l)) t.appendChild(el('div', null, el('span', {class: 'tip-k'}, l[0] + ': '), l[1]));
      else t.appendChild(el('div', null, l));
    }
    t.hidden = false;
    this.move(ev);
  },
  move(ev) {
    if (!this.node || this.node.hidden) return;
    const w = this.node.offsetWidth, h = this.node.offsetHeight;
    let x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + w > window.innerWidth - 8) x = Math.max(8, ev.clientX - w - 14);
    if (y + h > window.innerHeight - 8) y = Math.max(8, ev.clientY - h - 14);
    this.node.style.left = x + 'px';
    this.node.style.top = y + 'px';
  },
  hide() {
    if (this.node) this.node.hidden = true;
  },
};
