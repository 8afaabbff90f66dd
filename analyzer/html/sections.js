// The sections of one trace's report: header, summary, timeline, peak, leaks, OOMs and
// fragmentation, in the order a person reads them: what ran, how much it used, what went wrong.
'use strict';

function chip(text, cls) {
  return el('span', {class: 'chip ' + (cls || '')}, text);
}
function section(id, title, ...body) {
  return el('section', {id, class: 'card'}, el('h2', null, title), body);
}
function driverVersion(v) {
  return v ? Math.floor(v / 1000) + '.' + Math.floor(v % 1000 / 10) : 'unknown';
}

function traceHeader(t) {
  const p = t.process;
  const cmd = p.argv.join(' ') + (p.argc > p.argv.length ? ' \u2026 (' + p.argc + ' arguments)' : '');
  const status = [
    p.closed ? chip('trace closed cleanly', 'ok') : chip('trace ended without a clean close (crash or kill)', 'bad'),
    p.tracing_failed ? chip('tracing stopped early (disk full or size limit)', 'bad') : null,
    t.partial ? chip('records lost to damage: figures are lower bounds', 'bad') : null,
  ];
  const rows = [
    ['command', cmd.length <= 400 ? el('code', {class: 'argv'}, cmd || '(unknown)') :
      el('details', {class: 'long'}, el('summary', null, el('code', {class: 'argv'}, cmd.slice(0, 300) + '\u2026'),
          ' (' + fmtCount(cmd.length) + ' characters; click for all)'), el('code', {class: 'argv'}, cmd))],
    p.exe ? ['executable', el('code', null, p.exe)] : null,
    ['process', 'pid ' + p.pid + (p.ppid ? ', parent ' + p.ppid : '') + (p.host ? ' on ' + p.host : '') +
        (p.rank >= 0 ? ', rank ' + p.rank + (p.local_rank >= 0 ? ' (local ' + p.local_rank + ')' : '') : '')],
    p.session ? ['session', p.session] : null,
    ['devices', p.devices.length ? el('ul', {class: 'plain'}, p.devices.map((d) =>
      el('li', null, 'device ' + d.ordinal + ': ' + (d.name || '?') + ', ' + fmtBytes(d.total)))) : 'none recorded'],
    ['driver', 'CUDA ' + driverVersion(p.driver)],
    ['events', plural(t.events, 'event') + ', ' + fmtCount(t.failed) + ' failed' +
        (t.unmatched ? ', ' + plural(t.unmatched, 'free') + ' of unknown addresses' : '')],
    ['duration', fmtSecs(t.last - Math.min(0, t.first)) + (p.wall_ms ? ', started ' + new Date(p.wall_ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '')],
    ['trace file', el('code', null, t.path)],
  ];
  return el('header', {class: 'card trace-header'}, el('div', {class: 'chips'}, status), figures(rows),
      t.problems.length ? el('ul', {class: 'problems'}, t.problems.map((m) => el('li', null, m))) : null);
}

function summaryCards(t) {
  const top = t.peaks[0];
  const firstOom = t.ooms[0];
  const card = (label, value, sub, cls) => el('div', {class: 'stat ' + (cls || '')},
      el('div', {class: 'stat-label'}, label), el('div', {class: 'stat-value'}, value), el('div', {class: 'stat-sub'}, sub));
  return el('div', {class: 'stats'},
      card('peak device memory', top ? fmtBytes(top.bytes) : '0 B',
          top ? 'device ' + top.device + ' at ' + fmtSecs(top.t) : 'no device memory was allocated'),
      card(t.leaks.end === 'clean_exit' ? 'still allocated at exit' : 'live when the trace ended', fmtBytes(t.leaks.b),
          plural(t.leaks.n, 'allocation'), t.leaks.b ? 'warn' : ''),
      card('failed allocations (OOM)', fmtCount(t.ooms_total),
          firstOom ? 'first: ' + verdictText(firstOom.verdict) : 'none', t.ooms_total ? 'bad' : 'good'),
      card('pinned host peak', fmtBytes(t.pinned_peak), t.managed_peak ? 'managed peak ' + fmtBytes(t.managed_peak) : 'host memory'));
}

function timelineSection(t, ti) {
  const devices = [...new Set(t.timeline.map((s) => s.device).concat(t.peaks.map((p) => p.device)))].sort((a, b) => a - b);
  const body = devices.length ? devices.map((d) => timelineChart(t, d, ti)) :
    [el('p', {class: 'none'}, 'No memory was allocated.')];
  return section('timeline-' + ti, 'Memory over time', el('p', {class: 'sub'},
      'Live memory of this process per device; each point is the highest value in its time bucket, so no peak is hidden.'),
  body);
}

function peakSection(t, ti) {
  if (!t.peaks.length) return section('peak-' + ti, 'Peak', el('p', {class: 'none'}, 'No device memory was allocated.'));
  const panes = t.peaks.map((p) => {
    const kinds = Object.keys(p.by_kind).map((k) => k + ' ' + fmtBytes(p.by_kind[k])).join(', ');
    return el('div', {class: 'peak-pane'},
        el('p', {class: 'lead'}, 'Device ' + p.device + ': ', el('strong', null, fmtBytes(p.bytes)), ' at ' + fmtSecs(p.t) +
            (kinds ? ' (' + kinds + ')' : '')),
        icicle(p),
        el('h3', null, 'Live at the peak, by call site'),
        groupsTable(p.groups, {shareLabel: 'share of the peak'}));
  });
  let body = panes;
  if (panes.length > 1) {  // one device at a time: tabs
    const tabs = el('div', {class: 'tabs'});
    const show = (i) => {
      panes.forEach((pane, j) => {
        pane.hidden = i !== j;
      });
      [...tabs.children].forEach((b, j) => b.classList.toggle('active', i === j));
      if (panes[i].vtShown !== true) {
        panes[i].vtShown = true;
        panes[i].querySelectorAll('.icicle-box').forEach((b) => b.vtDraw());
      }
    };
    t.peaks.forEach((p, i) => tabs.appendChild(el('button', {type: 'button', onclick: () => show(i)},
        'device ' + p.device + ': ' + fmtBytes(p.bytes))));
    body = [tabs, panes];
    body.vtInit = () => show(0);
  }
  const s = section('peak-' + ti, 'Peak: who held the memory', body, regionsTable(t));
  s.vtInit = body.vtInit;
  return s;
}

// Named regions (vramtrace_region_begin/end, e.g. one test each) and the peak within each.
function regionsTable(t) {
  if (!t.regions.length) return null;
  const most = Math.max(1, ...t.regions.map((g) => g.peak - g.start));
  return [el('h3', null, 'Regions: peak device memory within each'),
    el('table', {class: 'groups'},
        el('thead', null, el('tr', null, ['region', 'from \u2192 to', 'at start', 'peak', 'above start', 'at end'].map((h) => el('th', null, h)))),
        el('tbody', null, t.regions.map((g) => el('tr', null,
            el('td', null, el('span', {class: 'site'}, g.name), g.closed ? null : el('span', {class: 'nframes'}, ' (not ended)')),
            el('td', {class: 'num'}, fmtSecs(g.t0) + ' \u2192 ' + (g.closed ? fmtSecs(g.t1) : 'end')),
            el('td', {class: 'num'}, fmtBytes(g.start)), el('td', {class: 'num'}, fmtBytes(g.peak)),
            el('td', {class: 'share'}, shareBar((g.peak - g.start) / most), ' +', fmtBytes(g.peak - g.start)),
            el('td', {class: 'num'}, fmtBytes(g.end)))))),
    t.regions_total > t.regions.length ? el('p', {class: 'sub'}, 'The first ' + t.regions.length + ' of ' +
        fmtCount(t.regions_total) + ' regions are shown; vramtrace report --format json lists all.') : null];
}

function leaksSection(t, ti) {
  const L = t.leaks;
  const what = L.end === 'clean_exit' ? 'Still allocated when the process exited (never freed)' :
    'Live when the trace ended: the process crashed or was killed, so this memory was in use, not necessarily leaked';
  return section('leaks-' + ti, 'Leaks and growth',
      el('p', {class: 'lead'}, what + ': ', el('strong', null, fmtBytes(L.b)), ' in ' + plural(L.n, 'allocation') + '.'),
      groupsTable(L.groups, {empty: 'Nothing was left allocated.', shareLabel: 'share of the leaks'}),
      L.teardown.b ? [el('h3', null, 'Released only by context teardown: ' + fmtBytes(L.teardown.b) + ' in ' +
          plural(L.teardown.n, 'allocation')), groupsTable(L.teardown.groups)] : null,
      el('h3', null, 'Growth: call sites whose live memory kept rising'),
      groupsTable(L.growth, {growth: true, empty: 'No call site kept growing.', shareLabel: 'share'}));
}

function evidenceValue(k, v) {
  return /_bytes$/.test(k) ? fmtBytes(v) : fmtCount(v);
}

function oomCard(o, i, ti) {
  const T = o.total, P = o.proc, N = o.na, F = o.free;
  const cached = Math.min(o.pool_cached + o.vmm_unmapped, N);
  const device = partsBar([
    {label: 'this process, live', bytes: P, cls: 'p-proc', always: true},
    {label: 'cached by this process (pools, unmapped VMM)', bytes: cached, cls: 'p-cached'},
    {label: 'elsewhere (other processes, driver)', bytes: N - cached, cls: 'p-others'},
    {label: 'free', bytes: F, cls: 'p-free', always: true},
  ], T, el('div', {class: 'request-row'},
      el('span', {class: 'request', style: 'width:' + Math.min(100, o.req / Math.max(1, T) * 100).toFixed(2) + '%'}),
      el('span', {class: 'request-label'}, 'request ' + fmtBytes(o.req) + (o.req > T ? ' (larger than the device)' :
        o.req > F ? ' (more than the ' + fmtBytes(F) + ' free)' : ''))));
  const maxScore = Math.max(1, ...o.causes.map((c) => c.score));
  const causes = el('ol', {class: 'causes'}, o.causes.map((c, k) => el('li', {class: k === 0 ? 'top' : null},
      el('div', {class: 'cause-head'}, el('span', {class: 'code'}, c.code), ' ', shareBar(c.score / maxScore, 'score'),
          el('span', {class: 'score'}, ' score ' + c.score.toFixed(2))),
      el('div', {class: 'summary'}, c.summary),
      el('div', {class: 'evidence'}, Object.keys(c.ev).map((k) => el('span', {class: 'ev'}, k.replace(/_/g, ' ') + ': ' + evidenceValue(k, c.ev[k])))))));
  const others = o.nvml ? [el('h4', null, 'Other processes on the device (NVML)'), o.others.length ?
    el('table', {class: 'groups'}, el('thead', null, el('tr', null, el('th', null, 'pid'), el('th', null, 'name'), el('th', null, 'memory'))),
        el('tbody', null, o.others.map((g) => el('tr', null, el('td', {class: 'num'}, String(g.pid)), el('td', null, g.name || '?'),
            el('td', {class: 'num'}, fmtBytes(g.b)))))) : el('p', {class: 'none'}, 'none')] : null;
  // The first failure open, the others one line each until opened: a run can fail many times.
  return el('details', {class: 'oom', id: 'oom-' + ti + '-' + i, open: i === 0 ? '' : null},
      el('summary', null, el('h3', null, '#' + (i + 1) + ' at ' + fmtSecs(o.t) + ': ' + o.op + ' of ' + fmtBytes(o.req) +
          ' on device ' + o.device + ' failed (CUresult ' + o.result + ')'), el('span', {class: 'oom-verdict'}, o.verdict)),
      el('div', {class: 'verdict'}, el('span', {class: 'verdict-label'}, 'verdict'), el('span', {class: 'verdict-code'}, o.verdict),
          el('span', {class: 'verdict-text'}, verdictText(o.verdict))),
      el('h4', null, 'The device at the failure (' + fmtBytes(T) + ')'), device,
      o.torch ? torchOomBlock(o.torch) : null,
      el('h4', null, 'Causes, most to blame first'), causes,
      el('h4', null, 'What to do'), el('ul', {class: 'remedies'}, o.remedies.map((m) => el('li', null, m))),
      el('h4', null, 'Requested at'), stackList(stackOf(o.s), 12),
      others,
      o.torch ? null : [el('h4', null, 'Top holders at the failure'), groupsTable(o.holders, {shareLabel: 'share of live'})],
      o.grew.length ? [el('h4', null, 'Sites that grew before the failure'), groupsTable(o.grew, {growth: true})] : null);
}

function oomSection(t, ti) {
  const counts = Object.keys(t.verdicts).map((k) => chip(k + ': ' + t.verdicts[k], 'verdict-chip'));
  return section('oom-' + ti, 'Out of memory: ' + plural(t.ooms_total, 'failed allocation'),
      t.ooms_total ? el('div', {class: 'chips'}, counts) : el('p', {class: 'none'}, 'No allocation failed for lack of memory.'),
      t.ooms_total > t.ooms.length ? el('p', {class: 'sub'}, 'The first ' + t.ooms.length + ' are shown; vramtrace oom lists all.') : null,
      t.ooms.map((o, i) => oomCard(o, i, ti)));
}

function fragSection(t, ti) {
  const f = t.frag, v = f.vmm;
  const parts = [];
  if (v.reserved_max) {
    parts.push(el('h3', null, 'VMM'), figures([
      ['reserved at the peak', fmtBytes(v.reserved_at_peak)],
      ['mapped at the peak', fmtBytes(v.mapped_at_peak) + (v.reserved_at_peak ? ' (' + fmtPct(1 - v.mapped_at_peak / v.reserved_at_peak) + ' unmapped)' : '')],
      ['reserved, maximum', fmtBytes(v.reserved_max)], ['mapped, maximum', fmtBytes(v.mapped_max)]]));
  }
  if (f.pools.length) {
    parts.push(el('h3', null, 'Stream-ordered pools (at the end of the trace)'), el('table', {class: 'groups'},
        el('thead', null, el('tr', null, ['pool', 'device', 'footprint', 'live', 'largest free gap', 'fragmentation'].map((h) => el('th', null, h)))),
        el('tbody', null, f.pools.map((p) => el('tr', null, el('td', null, el('code', null, p.pool)), el('td', {class: 'num'}, String(p.device)),
            el('td', {class: 'num'}, fmtBytes(p.footprint)), el('td', {class: 'num'}, fmtBytes(p.live)), el('td', {class: 'num'}, fmtBytes(p.gap)),
            el('td', {class: 'share'}, shareBar(p.frag, 'frag'), ' ', fmtPct(p.frag)))))));
  }
  if (f.flushes.length) {
    parts.push(el('h3', null, 'Cache flushes (a failed allocation, frees, a retry)'), el('table', {class: 'groups'},
        el('thead', null, el('tr', null, ['at', 'request', 'freed', 'frees', 'retry'].map((h) => el('th', null, h)))),
        el('tbody', null, f.flushes.map((c) => el('tr', null, el('td', {class: 'num'}, fmtSecs(c.t)), el('td', {class: 'num'}, fmtBytes(c.req)),
            el('td', {class: 'num'}, fmtBytes(c.freed)), el('td', {class: 'num'}, fmtCount(c.n)), el('td', null, c.ok ? 'succeeded' : 'failed'))))));
  }
  if (!parts.length) parts.push(el('p', {class: 'none'}, 'Nothing to report: no VMM reservations, pools or cache flushes.'));
  return section('frag-' + ti, 'Fragmentation', parts);
}

// One trace's whole report, into `root`. Charts are drawn once in the document (their width).
function renderTrace(t, ti, root) {
  const links = [['timeline', 'timeline'], ['peak', 'peak']].concat(t.torch ? [['torch', 'PyTorch']] : [],
      [['leaks', 'leaks'], ['oom', 'OOMs'], ['frag', 'fragmentation']]);
  const nav = el('nav', {class: 'toc'}, links.map(([id, label]) => el('a', {href: '#' + id + '-' + ti}, label)));
  const parts = [traceHeader(t), summaryCards(t), nav, timelineSection(t, ti), peakSection(t, ti),
    t.torch ? torchSection(t, ti) : null, leaksSection(t, ti), oomSection(t, ti), fragSection(t, ti)].filter((p) => p);
  parts.forEach((p) => root.appendChild(p));
  parts.forEach((p) => {
    if (p.vtInit) p.vtInit();
  });
  root.querySelectorAll('.timeline-box, .icicle-box').forEach((b) => {
    if (b.offsetParent !== null) b.vtDraw();
  });
}
