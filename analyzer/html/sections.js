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

// Sections take a trace context (traceContext in core.js): ctx.r is the report JSON.
function traceHeader(ctx) {
  const t = ctx.r.trace;
  const argc = t.argv.length + omittedEntries(ctx, '/trace/argv');
  const cmd = t.argv.join(' ') + (argc > t.argv.length ? ' \u2026 (' + argc + ' arguments)' : '');
  const status = [
    t.closed_cleanly ? chip('trace closed cleanly', 'ok') : chip('trace ended without a clean close (crash or kill)', 'bad'),
    t.tracing_failed ? chip('tracing stopped early (disk full or size limit)', 'bad') : null,
    t.partial ? chip('records lost to damage: figures are lower bounds', 'bad') : null,
  ];
  const rows = [
    ['command', cmd.length <= 400 ? el('code', {class: 'argv'}, cmd || '(unknown)') :
      el('details', {class: 'long'}, el('summary', null, el('code', {class: 'argv'}, cmd.slice(0, 300) + '\u2026'),
          ' (' + fmtCount(cmd.length) + ' characters; click for all)'), el('code', {class: 'argv'}, cmd))],
    t.exe ? ['executable', el('code', null, t.exe)] : null,
    ['process', 'pid ' + t.pid + (t.ppid ? ', parent ' + t.ppid : '') + (t.hostname ? ' on ' + t.hostname : '') +
        (t.rank >= 0 ? ', rank ' + t.rank + (t.local_rank >= 0 ? ' (local ' + t.local_rank + ')' : '') : '')],
    t.session ? ['session', t.session] : null,
    ['devices', t.devices.length ? el('ul', {class: 'plain'}, t.devices.map((d) =>
      el('li', null, 'GPU ' + d.ordinal + ': ' + (d.name || '?') + ', ' + fmtBytes(d.total_bytes)))) : 'none recorded'],
    ['driver', 'CUDA ' + driverVersion(t.driver_version)],
    ['events', plural(t.events, 'event') + ', ' + fmtCount(t.failed_events) + ' failed' +
        (t.unmatched_frees ? ', ' + plural(t.unmatched_frees, 'free') + ' of unknown addresses' : '')],
    ['duration', fmtSecs(ctx.rel(t.last_t_ns) - Math.min(0, ctx.rel(t.first_t_ns))) +
        (ctx.wallMs ? ', started ' + new Date(ctx.wallMs).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '')],
    ['trace file', el('code', null, t.path)],
  ];
  const more = omittedEntries(ctx, '/trace/problems');
  const escaped = interceptionNotes(ctx);
  if (escaped.length) status.push(chip('memory calls escaped the hooks: figures may be low', 'bad'));
  return el('header', {class: 'card trace-header'}, el('div', {class: 'chips'}, status), figures(rows),
      t.problems.length ? el('ul', {class: 'problems'}, t.problems.map((m) => el('li', null, m)),
          more ? el('li', null, '\u2026 ' + plural(more, 'more note')) : null) : null,
      escaped.length ? el('ul', {class: 'problems'}, escaped.map((m) => el('li', null, m))) : null);
}

// What escaped the hooks (report "interception", docs/interception.md): one line per finding.
function interceptionNotes(ctx) {
  const x = ctx.r.interception;
  if (!x) return [];
  const notes = [];
  if (x.cudart_unreached) notes.push('libcudart was loaded but no driver lookup reached vramtrace: its memory calls may be missing.');
  const gaps = x.unhooked || [], all = x.isolated_libraries || [];
  const libs = all.filter((l) => !l.caught);  // those the LD_AUDIT module caught are traced
  const gapCount = gaps.length + omittedEntries(ctx, '/interception/unhooked');
  const libCount = libs.length + (libs.length === all.length ? omittedEntries(ctx, '/interception/isolated_libraries') : 0);
  if (gapCount) notes.push(plural(gapCount, 'memory entry point') + ' handed out unhooked: ' +
      gaps.map((g) => g.symbol + ' (' + g.category + ')').join(', ') + (gapCount > gaps.length ? ', \u2026' : '') + '.');
  if (libCount) notes.push(fmtCount(libCount) + (libCount === 1 ? ' library' : ' libraries') + ' opened where the hooks cannot reach ' +
      '(their CUDA memory calls, and those of the libraries loaded with them, are not in this report): ' +
      libs.map((l) => l.path + ' (' + l.how + ')').join(', ') + (libCount > libs.length ? ', \u2026' : '') + '.');
  return notes;
}

function oomCount(ctx) {
  return ctx.r.ooms.length + omittedEntries(ctx, '/ooms');
}

function summaryCards(ctx) {
  const R = ctx.r;
  const top = R.peak.by_device[0];
  const lastOom = R.ooms[R.ooms.length - 1];
  const ooms = oomCount(ctx);
  const card = (label, value, sub, cls) => el('div', {class: 'stat ' + (cls || '')},
      el('div', {class: 'stat-label'}, label), el('div', {class: 'stat-value'}, value), el('div', {class: 'stat-sub'}, sub));
  return el('div', {class: 'stats'},
      card('peak device memory', top ? fmtBytes(top.bytes) : '0 B',
          top ? 'GPU ' + top.device + ' at ' + fmtSecs(ctx.rel(top.t_ns)) : 'no device memory was allocated'),
      card(R.leaks.end === 'clean_exit' ? 'still allocated at exit' : 'live when the trace ended', fmtBytes(R.leaks.bytes),
          plural(R.leaks.count, 'allocation'), R.leaks.bytes ? 'warn' : ''),
      card('failed allocations (OOM)', fmtCount(ooms),
          lastOom ? (ooms > 1 ? 'last: ' : '') + verdictText(lastOom.verdict) : 'none', ooms ? 'bad' : 'good'),
      card('pinned host peak', fmtBytes(R.peak.pinned_host_bytes),
          R.peak.managed_bytes ? 'managed peak ' + fmtBytes(R.peak.managed_bytes) : 'host memory'));
}

function timelineSection(ctx) {
  const R = ctx.r;
  const devices = [...new Set(R.timeline.map((s) => s.device).concat(R.peak.by_device.map((p) => p.device)))].sort((a, b) => a - b);
  const body = devices.length ? devices.map((d) => timelineChart(ctx, d)) :
    [el('p', {class: 'none'}, 'No memory was allocated.')];
  return section('timeline-' + ctx.index, 'Memory over time', el('p', {class: 'sub'},
      'Live memory of this process per device; each point is the highest value in its time bucket, so no peak is hidden.'),
  body);
}

// CUDA graphs on a device (report "graphs"): the graph pool and the graph memory nodes, or nothing.
function graphsLine(ctx, device) {
  const g = (ctx.r.graphs || []).find((x) => x.device === device);
  if (!g) return null;
  let text = 'CUDA graph pool: ' + fmtBytes(g.pool_reserved_at_peak_bytes) + ' at the peak, up to ' +
      fmtBytes(g.pool_reserved_max_bytes) + ' reserved; ' + fmtBytes(g.pool_reserved_bytes) + ' reserved (' +
      fmtBytes(g.pool_used_bytes) + ' used) at the end.';
  if (g.memory_nodes) text += ' ' + g.memory_nodes + ' graph memory node' + (g.memory_nodes === 1 ? '' : 's') +
      ' made (' + fmtBytes(g.memory_node_bytes) + ', virtual)' +
      (g.captured_allocations ? ', ' + g.captured_allocations + ' captured from streams' : '') + '.';
  return el('p', {class: 'sub'}, text);
}

// The device's used memory (the driver's total - free) against what vramtrace explains of it
// (report "fidelity"), or nothing without a driver reading.
function fidelityBlock(f) {
  if (!f) return null;
  const row = (label, bytes, note) => el('tr', null, el('td', null, label),
      el('td', {class: 'num'}, bytes === null ? 'not known' : fmtBytes(bytes)), el('td', null, note || ''));
  const kinds = Object.keys(f.tracked_by_kind).map((k) => k + ' ' + fmtBytes(f.tracked_by_kind[k])).join(', ');
  const rest = f.unexplained_bytes;
  // A reading taken away from the moment is labelled as what it is: when, and how much tracked
  // memory changed between the two (the text report's words).
  const dc = f.tracked_change_bytes || 0;
  const change = dc ? 'tracked allocations changed by ' + (dc > 0 ? '+' : '-') + fmtBytes(Math.abs(dc)) + ' from the earlier to the later' :
    'tracked allocations did not change between the two';
  const when = f.at_instant ? '' : ' (no driver reading at this moment: the nearest was taken ' + fmtSecs(Math.abs(f.offset_ns)) +
      (f.offset_ns < 0 ? ' before' : ' after') + ' it, and ' + change + '; the figures below are of then)';
  return [el('h4', null, 'Used on the GPU: ' + fmtBytes(f.used_bytes) + ' of ' + fmtBytes(f.total_bytes) + when),
    el('table', {class: 'groups fidelity'}, el('tbody', null,
        row('tracked allocations', f.tracked_bytes, kinds),
        row('contexts', f.contexts_bytes), row('modules and code', f.modules_bytes),
        row('kept free by pools', f.pool_cached_bytes, f.pool_cached_source),
        row('CUPTI buffers', f.cupti_buffers_bytes), row('other processes (NVML)', f.other_processes_bytes),
        el('tr', null, el('td', null, el('strong', null, 'unexplained')),
            el('td', {class: 'num'}, (rest < 0 ? '-' : '') + fmtBytes(Math.abs(rest))),
            el('td', null, (f.unexplained_share * 100).toFixed(1) + '% of used'))))];
}

function peakSection(ctx) {
  const peaks = ctx.r.peak.by_device;
  if (!peaks.length) return section('peak-' + ctx.index, 'Peak', el('p', {class: 'none'}, 'No device memory was allocated.'));
  const panes = peaks.map((p, i) => {
    const kinds = Object.keys(p.by_kind).map((k) => k + ' ' + fmtBytes(p.by_kind[k])).join(', ');
    const path = '/peak/by_device/' + i + '/live_set';
    return el('div', {class: 'peak-pane'},
        el('p', {class: 'lead'}, 'Device ' + p.device + ': ', el('strong', null, fmtBytes(p.bytes)), ' at ' + fmtSecs(ctx.rel(p.t_ns)) +
            (kinds ? ' (' + kinds + ')' : '')),
        graphsLine(ctx, p.device),
        fidelityBlock(p.fidelity),
        icicle(ctx, p, path),
        el('h3', null, 'Live at the peak, by call site'),
        groupsTable(ctx, p.live_set, path, {shareLabel: 'share of the peak'}));
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
    peaks.forEach((p, i) => tabs.appendChild(el('button', {type: 'button', onclick: () => show(i)},
        'GPU ' + p.device + ': ' + fmtBytes(p.bytes))));
    body = [tabs, panes];
    body.vtInit = () => show(0);
  }
  const s = section('peak-' + ctx.index, 'Peak: who held the memory', body, regionsTable(ctx));
  s.vtInit = body.vtInit;
  return s;
}

// Named regions (vramtrace_region_begin/end, e.g. one test each) and the peak within each.
function regionsTable(ctx) {
  const regions = ctx.r.regions;
  if (!regions.length) return null;
  const total = regions.length + omittedEntries(ctx, '/regions');
  const most = Math.max(1, ...regions.map((g) => g.peak_above_start_bytes));
  return [el('h3', null, 'Regions: peak device memory within each'),
    el('table', {class: 'groups'},
        el('thead', null, el('tr', null, ['region', 'from \u2192 to', 'at start', 'peak', 'above start', 'at end'].map((h) => el('th', null, h)))),
        el('tbody', null, regions.map((g) => el('tr', null,
            el('td', null, el('span', {class: 'site'}, g.name), g.closed ? null : el('span', {class: 'nframes'}, ' (not ended)')),
            el('td', {class: 'num'}, fmtSecs(ctx.rel(g.t_begin_ns)) + ' \u2192 ' + (g.closed ? fmtSecs(ctx.rel(g.t_end_ns)) : 'end')),
            el('td', {class: 'num'}, fmtBytes(g.start_bytes)), el('td', {class: 'num'}, fmtBytes(g.peak_bytes)),
            el('td', {class: 'share'}, shareBar(g.peak_above_start_bytes / most), ' +', fmtBytes(g.peak_above_start_bytes)),
            el('td', {class: 'num'}, fmtBytes(g.end_bytes)))))),
    total > regions.length ? el('p', {class: 'sub'}, 'The first ' + regions.length + ' of ' +
        fmtCount(total) + ' regions are shown; vramtrace report --format json lists all.') : null];
}

function leaksSection(ctx) {
  const L = ctx.r.leaks;
  const what = L.end === 'clean_exit' ? 'Still allocated when the process exited (never freed)' :
    L.end === 'running' ? 'Live now: the process is still running (the trace is being written)' :
    'Live when the trace ended: the process crashed or was killed, so this memory was in use, not necessarily leaked';
  return section('leaks-' + ctx.index, 'Leaks and growth',
      el('p', {class: 'lead'}, what + ': ', el('strong', null, fmtBytes(L.bytes)), ' in ' + plural(L.count, 'allocation') + '.'),
      groupsTable(ctx, L.groups, '/leaks/groups', {empty: 'Nothing was left allocated.', shareLabel: 'share of the leaks'}),
      L.pytorch_cache && L.pytorch_cache.reserved_bytes ? el('p', {class: 'sub'}, 'Not counted as leaks: PyTorch\u2019s caching allocator still reserved ' +
          fmtBytes(L.pytorch_cache.reserved_bytes) + ' in ' + plural(L.pytorch_cache.segments, 'segment') + ', ' +
          fmtBytes(L.pytorch_cache.cached_bytes) + ' of it cached (free: empty_cache() would have released it; the exit gives it all back)' +
          (L.pytorch_cache.cublas_workspace_bytes ? ', ' + fmtBytes(L.pytorch_cache.cublas_workspace_bytes) +
              ' its cuBLAS workspaces (kept for the process\u2019s life)' : '') +
          '; its other tensors still allocated are in the table above.') : null,
      L.pytorch_host_cache && L.pytorch_host_cache.count ? el('p', {class: 'sub'}, 'Not counted as leaks: PyTorch\u2019s pinned host memory cache ' +
          '(its CachingHostAllocator keeps pinned blocks until exit) holds ' + fmtBytes(L.pytorch_host_cache.bytes) + ' in ' +
          plural(L.pytorch_host_cache.count, 'allocation') + '.') : null,
      L.teardown.bytes ? [el('h3', null, 'Released only by context teardown: ' + fmtBytes(L.teardown.bytes) + ' in ' +
          plural(L.teardown.count, 'allocation')), groupsTable(ctx, L.teardown.groups, '/leaks/teardown/groups')] : null,
      el('h3', null, 'Growth: call sites whose live memory kept rising'),
      groupsTable(ctx, L.growth, '/leaks/growth', {growth: true, empty: 'No call site kept growing.', shareLabel: 'share'}),
      L.growth_pytorch_segments_not_listed ? el('p', {class: 'sub'}, 'Not listed: ' + plural(L.growth_pytorch_segments_not_listed, 'call site') +
          ' of PyTorch\u2019s segments (its reserved memory, which follows its tensors: the tensor lines in the PyTorch section say what grew).') : null,
      sharingBlock(ctx));
}

// Memory shared with other processes (report "sharing", present only when something was
// imported, exported or multicast): the text report's SHARING lines, with their call sites.
function sharingBlock(ctx) {
  const S = ctx.r.sharing;
  if (!S) return null;
  const I = S.imported, X = S.exported, M = S.multicast;
  return el('div', {class: 'sharing'},
      el('h3', null, 'Shared memory: other processes\u2019 memory is not this process\u2019s (no leak, not in its peak)'),
      el('p', null, 'Imported: ', el('strong', null, fmtBytes(I.bytes)), ' in ' + plural(I.count, 'import') +
          ' still open at the end, at most ' + fmtBytes(I.max_bytes) + ' at once.'),
      I.groups.length ? groupsTable(ctx, I.groups, '/sharing/imported/groups', {shareLabel: 'share of the imports'}) : null,
      X.calls ? el('p', null, 'Exported: ' + plural(X.count, 'allocation') + ' of ' + fmtBytes(X.bytes) +
          ' shared with other processes (' + plural(X.calls, 'export call') + ').') : null,
      X.groups.length ? groupsTable(ctx, X.groups, '/sharing/exported/groups', {shareLabel: 'share of the exports'}) : null,
      M.objects ? el('p', null, 'Multicast: ' + plural(M.objects, 'object') + ' of ' + fmtBytes(M.bytes) + ' created, ' +
          fmtCount(M.live) + ' left at the end with ' + fmtBytes(M.bound_bytes) + ' bound (no memory of their own: ' +
          'the memory bound to them is counted where it was created).') : null,
      M.groups.length ? groupsTable(ctx, M.groups, '/sharing/multicast/groups', {shareLabel: 'share of the objects'}) : null);
}

function evidenceValue(k, v) {
  return /_bytes$/.test(k) ? fmtBytes(v) : fmtCount(v);
}

// The order the OOM cards are shown in, as indices into the page's `ooms` (in time order): the
// last failure first, the one the program ended with (an uncaught OutOfMemoryError ends a
// script: failures before it were caught), then the others from the first on.
function oomOrder(count) {
  const order = [];
  if (count) order.push(count - 1);
  for (let i = 0; i + 1 < count; i++) order.push(i);
  return order;
}

// The number of the page's OOM i among all of them: the page keeps the first ones and the last
// (report_html.cpp), so the last is the trace's last whatever was left out between.
function oomNumber(ctx, i) {
  return i === ctx.r.ooms.length - 1 ? oomCount(ctx) : i + 1;
}

// `first`: the card shown first and open (the last failure).
function oomCard(ctx, o, i, first) {
  const T = o.device_total_bytes, P = o.process_device_bytes, F = o.device_free_bytes;
  const R = o.requested_bytes;
  // The split is the analyzer's (split_unattributed): shown as it is, never recomputed here.
  const cached = o.own_cached_bytes, code = o.own_code_bytes, unsure = o.elsewhere_unsure_bytes;
  const path = '/ooms/' + i;
  const device = partsBar([
    {label: 'this process, live', bytes: P, cls: 'p-proc', always: true},
    {label: 'cached by this process (pools, unmapped VMM)', bytes: cached, cls: 'p-cached'},
    {label: 'contexts and code of this process' + (o.own_code_basis === 'nvml' ? ' (NVML\'s figure for it, less its live and cached memory)' : ''),
      bytes: code, cls: 'p-code'},
    {label: 'elsewhere (other processes, driver' + (unsure ? '; up to ' + fmtBytes(unsure) +
      ' of it may be this process\'s first context, measured only after it was made)' : ')'), bytes: o.elsewhere_bytes, cls: 'p-others'},
    {label: 'free', bytes: F, cls: 'p-free', always: true},
  ], T, el('div', {class: 'request-row'},
      el('span', {class: 'request', style: 'width:' + Math.min(100, R / Math.max(1, T) * 100).toFixed(2) + '%'}),
      el('span', {class: 'request-label'}, 'request ' + fmtBytes(R) + (R > T ? ' (larger than the device)' :
        R > F ? ' (more than the ' + fmtBytes(F) + ' free)' : ''))));
  const maxScore = Math.max(1, ...o.causes.map((c) => c.score));
  const causes = el('ol', {class: 'causes'}, o.causes.map((c, k) => el('li', {class: k === 0 ? 'top' : null},
      el('div', {class: 'cause-head'}, el('span', {class: 'code'}, c.code), ' ', shareBar(c.score / maxScore, 'score'),
          el('span', {class: 'score'}, ' score ' + c.score.toFixed(2))),
      el('div', {class: 'summary'}, c.summary),
      el('div', {class: 'evidence'}, Object.keys(c.evidence).map((k) => el('span', {class: 'ev'}, k.replace(/_/g, ' ') + ': ' + evidenceValue(k, c.evidence[k])))))));
  const blind = o.nvml_blind ? el('p', {class: 'sub'}, 'NVML cannot see this process (no row has its pid: a container\u2019s PID ' +
      'namespace): it names no other process for sure; what the driver shows used beyond this process\u2019s memory, caches and ' +
      'contexts is elsewhere.') : null;
  const others = o.nvml ? [blind, el('h4', null, o.nvml_blind ? 'NVML\u2019s rows (pids of another namespace, this process\u2019s own possibly among them)' :
      'Other processes on the GPU (NVML)'), o.other_processes.length ?
    el('table', {class: 'groups'}, el('thead', null, el('tr', null, el('th', null, 'pid'), el('th', null, 'name'), el('th', null, 'memory'))),
        el('tbody', null, o.other_processes.map((g) => el('tr', null, el('td', {class: 'num'}, String(g.pid)), el('td', null, g.name || '?'),
            el('td', {class: 'num'}, fmtBytes(g.bytes)))))) : el('p', {class: 'none'}, 'none')] : null;
  // The last failure open, the others one line each until opened: a run can fail many times.
  const total = oomCount(ctx);
  return el('details', {class: 'oom', id: 'oom-' + ctx.index + '-' + i, open: first ? '' : null},
      el('summary', null, el('h3', null, '#' + oomNumber(ctx, i) + ' at ' + fmtSecs(ctx.rel(o.t_ns)) + ': ' + o.op + ' of ' + fmtBytes(R) +
          ' on GPU ' + o.device + ' failed: ' + (o.result_name ? o.result_name + ' (' + o.result + ')' : 'CUresult ' + o.result)),
          first && total > 1 ? el('span', {class: 'oom-last'}, 'the last failure') : null,
          el('span', {class: 'oom-verdict'}, o.verdict)),
      el('div', {class: 'verdict'}, el('span', {class: 'verdict-label'}, 'verdict'), el('span', {class: 'verdict-code'}, o.verdict),
          el('span', {class: 'verdict-text'}, verdictText(o.verdict))),
      el('h4', null, 'The GPU at the failure (' + fmtBytes(T) + ')'), device, fidelityBlock(o.fidelity),
      o.torch ? torchOomBlock(ctx, o.torch, path + '/torch') : null,
      el('h4', null, 'Causes, most to blame first'), causes,
      el('h4', null, 'What to do'), el('ul', {class: 'remedies'}, o.remedies.map((m) => el('li', null, m))),
      el('h4', null, 'Requested at' + (o.autograd_thread ? " (in backward, on PyTorch's autograd thread " + o.autograd_thread + ')' : '')),
      stackList(o.stack, 12, omittedEntries(ctx, path + '/stack')),
      others,
      // PyTorch's OOMs list its tensors by line (above) instead of the driver-level holders.
      o.torch ? null : [el('h4', null, 'Top holders at the failure'),
        groupsTable(ctx, o.top_holders, path + '/top_holders', {shareLabel: 'share of live'})],
      o.grew_before.length ? [el('h4', null, 'Sites that grew before the failure'),
        groupsTable(ctx, o.grew_before, path + '/grew_before', {growth: true})] : null);
}

function oomSection(ctx) {
  const R = ctx.r;
  const total = oomCount(ctx);
  // Verdicts of every failure: those shown, and those the page's limit left out.
  const verdicts = {};
  R.ooms.forEach((o) => {
    verdicts[o.verdict] = (verdicts[o.verdict] || 0) + 1;
  });
  const left = ctx.omitted('/ooms');
  if (left && left.verdicts) Object.keys(left.verdicts).forEach((k) => {
    verdicts[k] = (verdicts[k] || 0) + left.verdicts[k];
  });
  const counts = Object.keys(verdicts).sort().map((k) => chip(k + ': ' + verdicts[k], 'verdict-chip'));
  return section('oom-' + ctx.index, 'Out of memory: ' + plural(total, 'failed allocation'),
      total ? el('div', {class: 'chips'}, counts) : el('p', {class: 'none'}, 'No allocation failed for lack of memory.'),
      total > 1 ? el('p', {class: 'sub'}, 'The last failure first (the one the program ended with, when it did not catch it), then the others in order.') : null,
      total > R.ooms.length ? el('p', {class: 'sub'}, 'The first ' + (R.ooms.length - 1) + ' and the last are shown; vramtrace oom lists all.') : null,
      oomOrder(R.ooms.length).map((i, k) => oomCard(ctx, R.ooms[i], i, k === 0)));
}

// The cache flushes of the run, in time order: those the analysis recognised at the driver
// (fragmentation.cache_flushes: a failed allocation, frees, the same request again), and each
// PyTorch OOM's, which the text report states on the OOM ("N failed cudaMalloc calls (the cache
// was flushed between)"): PyTorch frees its cache and retries once before it raises, so every
// OutOfMemoryError had a flush (num_alloc_retries counts both kinds). A flush that freed something
// and whose retry failed is both: the row of cache_flushes, named after its OOM. An OOM's own row
// freed nothing when its two driver calls had no free between them (the analysis records no
// flush then), and its frees are not known when no driver call failed (a memory fraction reached).
// Rows: {t_ns, requested_bytes, freed_bytes, freed_count (null: not known), retry_succeeded, oom}.
function cacheFlushes(ctx) {
  const rows = ctx.r.fragmentation.cache_flushes.map((c) => Object.assign({}, c));
  let since = -Infinity;
  ctx.r.ooms.forEach((o, i) => {
    if (!o.torch) return;
    const mine = rows.find((c) => c.oom === undefined && !c.retry_succeeded && c.t_ns > since && c.t_ns <= o.t_ns);
    since = o.t_ns;
    if (mine) {
      mine.oom = i;
      return;
    }
    const known = o.torch.driver_attempts > 1;
    rows.push({t_ns: o.t_ns, requested_bytes: o.requested_bytes, freed_bytes: known ? 0 : null, freed_count: known ? 0 : null,
      retry_succeeded: false, oom: i});
  });
  return rows.sort((a, b) => a.t_ns - b.t_ns);
}

function fragSection(ctx) {
  const f = ctx.r.fragmentation, v = f.vmm;
  const parts = [];
  if (v.reserved_bytes_max) {
    parts.push(el('h3', null, 'VMM'), figures([
      ['reserved at the peak', fmtBytes(v.reserved_bytes_at_peak)],
      ['mapped at the peak', fmtBytes(v.mapped_bytes_at_peak) + (v.reserved_bytes_at_peak ? ' (' + fmtPct(v.unmapped_fraction_at_peak) + ' unmapped)' : '')],
      ['reserved, maximum', fmtBytes(v.reserved_bytes_max)], ['mapped, maximum', fmtBytes(v.mapped_bytes_max)]]));
  }
  const more = (path, what) => {
    const n = omittedEntries(ctx, path);
    return n ? el('p', {class: 'sub'}, '\u2026 ' + plural(n, what) + ' more (vramtrace report --format json lists all).') : null;
  };
  if (f.pools.length) {
    parts.push(el('h3', null, 'Stream-ordered pools (at the end of the trace)'), el('table', {class: 'groups'},
        el('thead', null, el('tr', null, ['pool', 'device', 'footprint', 'live', 'largest free gap', 'fragmentation'].map((h) => el('th', null, h)))),
        el('tbody', null, f.pools.map((p) => el('tr', null, el('td', null, el('code', null, p.pool)), el('td', {class: 'num'}, String(p.device)),
            el('td', {class: 'num'}, fmtBytes(p.footprint_bytes)), el('td', {class: 'num'}, fmtBytes(p.live_bytes)),
            el('td', {class: 'num'}, fmtBytes(p.largest_free_gap_bytes)),
            el('td', {class: 'share'}, shareBar(p.fragmentation, 'frag'), ' ', fmtPct(p.fragmentation)))))),
    more('/fragmentation/pools', 'pool'));
  }
  const flushes = cacheFlushes(ctx);
  if (flushes.length) {
    const torch = !!ctx.r.torch;
    parts.push(el('h3', null, 'Cache flushes: ' + fmtCount(flushes.length + omittedEntries(ctx, '/fragmentation/cache_flushes')) +
        ' (a failed allocation, the cache freed, a retry' + (torch ? ': PyTorch\u2019s num_alloc_retries' : '') + ')'),
    el('table', {class: 'groups'},
        el('thead', null, el('tr', null, ['at', 'request', 'freed', 'frees', 'retry'].map((h) => el('th', null, h)))),
        el('tbody', null, flushes.map((c) => el('tr', null, el('td', {class: 'num'}, fmtSecs(ctx.rel(c.t_ns))),
            el('td', {class: 'num'}, fmtBytes(c.requested_bytes)),
            el('td', {class: 'num'}, c.freed_bytes === null ? '\u2014' : fmtBytes(c.freed_bytes)),
            el('td', {class: 'num'}, c.freed_count === null ? '\u2014' : fmtCount(c.freed_count)),
            el('td', null, c.retry_succeeded ? 'succeeded' : c.oom === undefined ? 'failed' :
              el('a', {href: '#oom-' + ctx.index + '-' + c.oom}, 'failed: OOM #' + oomNumber(ctx, c.oom))))))),
    more('/fragmentation/cache_flushes', 'cache flush'));
  }
  for (const d of (f.pytorch || []).filter((d) => d.figures.inactive_split_bytes)) {
    parts.push(el('h3', null, 'PyTorch\u2019s cache, device ' + d.device + ', at its most fragmented (' + fmtSecs(ctx.rel(d.t_ns)) +
        ', when a request needed a new segment or failed)'),
      el('p', {class: 'sub'}, 'Inactive split ' + fmtBytes(d.figures.inactive_split_bytes) + ' (' + fmtPct(d.fragmentation) + ' of its ' +
        fmtBytes(d.figures.reserved_bytes) + ' reserved: free space in segments that still hold tensors, which empty_cache() cannot ' +
        'release); largest free block ' + fmtBytes(d.figures.largest_free_block_bytes) + '.'));
  }
  if (!parts.length) parts.push(el('p', {class: 'none'}, 'Nothing to report: no VMM reservations, pools, cache flushes or fragmented PyTorch cache.'));
  return section('frag-' + ctx.index, 'Fragmentation', parts);
}

// One trace's whole report, into `root`. Charts are drawn once in the document (their width).
function renderTrace(ctx, root) {
  const ti = ctx.index;
  const torch = !!ctx.r.torch;
  const links = [['timeline', 'timeline'], ['peak', 'peak']].concat(torch ? [['torch', 'PyTorch']] : [],
      [['leaks', 'leaks'], ['oom', 'OOMs'], ['frag', 'fragmentation']]);
  const nav = el('nav', {class: 'toc'}, links.map(([id, label]) => el('a', {href: '#' + id + '-' + ti}, label)));
  const parts = [traceHeader(ctx), summaryCards(ctx), nav, timelineSection(ctx), peakSection(ctx),
    torch ? torchSection(ctx) : null, leaksSection(ctx), oomSection(ctx), fragSection(ctx)].filter((p) => p);
  parts.forEach((p) => root.appendChild(p));
  parts.forEach((p) => {
    if (p.vtInit) p.vtInit();
  });
  root.querySelectorAll('.timeline-box, .icicle-box').forEach((b) => {
    if (b.offsetParent !== null) b.vtDraw();
  });
}
