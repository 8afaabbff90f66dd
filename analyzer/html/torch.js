// PyTorch in its own terms (present only where PyTorch was seen): the allocator's mode and block
// layer, per device the figures of torch.cuda.memory_stats() at the peak and at fragmentation's
// worst, the tensor timeline (live tensors by Python line, stacked, like memory_viz's Active
// Memory Timeline; the analysis keeps each time bucket's high, ~1000 points whatever the number
// of blocks, and the page adds the exact states at the peak and each OOM), the tensors and
// segments at the peak, and an OOM's PyTorch part.
'use strict';
// It reads the report JSON's `torch` object and each OOM's `torch` (docs/report-schema.md).

function torchFigures(f) {
  return figures([
    ['allocated', fmtBytes(f.allocated_bytes) + ' in ' + plural(f.blocks, 'tensor')],
    ['reserved', fmtBytes(f.reserved_bytes) + ' in ' + plural(f.segments, 'segment')],
    ['reserved but unallocated', fmtBytes(f.reserved_unallocated_bytes)],
    ['inactive split', fmtBytes(f.inactive_split_bytes) + ' (free space in segments that still hold live tensors)'],
    ['largest free block', fmtBytes(f.largest_free_block_bytes)],
  ]);
}

// Tensor groups as the site tables show them (their kind is always a tensor).
function torchHolders(ctx, list, path, shareLabel) {
  return groupsTable(ctx, (list || []).map((g) => Object.assign({kind: 'tensor'}, g)), path, {shareLabel});
}

function segmentsTable(ctx, v, path) {
  const more = (v.segments_not_shown || 0) + omittedEntries(ctx, path + '/segments');
  if (!v.segments.length) return null;
  return [el('h4', null, 'Segments with the most free space'), el('table', {class: 'groups'},
      el('thead', null, el('tr', null, ['segment', 'size', 'allocated', 'free', 'largest free block', 'tensors', 'first tensor at'].map((h) => el('th', null, h)))),
      el('tbody', null, v.segments.map((g) => el('tr', null,
          el('td', null, el('code', null, '0x' + Number(g.address).toString(16)), g.expandable ? ' (expandable)' : ''),
          el('td', {class: 'num'}, fmtBytes(g.size)), el('td', {class: 'num'}, fmtBytes(g.allocated_bytes)),
          el('td', {class: 'num'}, fmtBytes(g.free_bytes)), el('td', {class: 'num'}, fmtBytes(g.largest_free_block_bytes)),
          el('td', {class: 'num'}, fmtCount(g.blocks)), el('td', null, g.allocated_at || ''))))),
    more ? el('p', {class: 'sub'}, plural(more, 'more segment') + ' (vramtrace report --format json lists them)') : null];
}

// The instants the tensor timeline knows, in time order, each exact at its own instant:
//  - each time bucket's high (report torch.devices[].tensor_timeline: the analysis snapshots the
//    live tensors by line at the bucket's highest allocated, so a point is the state at its t_ns,
//    not a sum or a mean; what happened between two points is not in the page),
//  - the allocated peak (the device's at_peak view),
//  - each PyTorch OOM on the device (its at_oom view: the allocated of PyTorch's message).
// A view lists the biggest lines only (--top): its lines outside the timeline's and what the rest
// held are `other`, so every state's total is exact. A bucket point at the same instant with the
// same total is the same state: it keeps its lines and takes the view's name.
// Returns {lines: [label], states: [{t (relative ns), v: [bytes per line], other, total,
// kind: 'bucket' | 'peak' | 'oom', oom: index into ctx.r.ooms}]}.
function tensorStates(ctx, d) {
  const TL = d.tensor_timeline || {t_ns: [], lines: [], other: []};
  const lines = TL.lines.map((l) => l.line);
  const index = new Map(lines.map((l, i) => [l, i]));
  const states = TL.t_ns.map((t, k) => {
    const v = TL.lines.map((l) => Number(l.values[k]) || 0);
    const other = Number(TL.other[k]) || 0;
    return {t: ctx.rel(t), v, other, total: v.reduce((a, b) => a + b, other), kind: 'bucket'};
  });
  const fromView = (t, view, kind, oom) => {
    const v = new Array(lines.length).fill(0);
    let listed = 0, other = 0;
    for (const h of view.holders || []) {
      const i = index.get(h.line || '(no stack recorded)');
      if (i === undefined) other += h.bytes;
      else v[i] += h.bytes;
      listed += h.bytes;
    }
    const total = Number(view.figures.allocated_bytes) || 0;
    other += Math.max(0, total - listed);
    return {t: ctx.rel(t), v, other, total, kind, oom};
  };
  const named = [];
  if (d.at_peak && d.at_peak.figures) named.push(fromView(d.peak_allocated_t_ns, d.at_peak, 'peak'));
  ctx.r.ooms.forEach((o, i) => {
    if (o.torch && o.torch.device === d.device && o.torch.at_oom) named.push(fromView(o.torch.t_ns, o.torch.at_oom, 'oom', i));
  });
  for (const s of named) {
    const same = states.find((x) => x.kind === 'bucket' && x.t === s.t && x.total === s.total);
    if (same) {
      same.kind = s.kind;
      same.oom = s.oom;
    } else {
      states.push(s);
    }
  }
  states.sort((a, b) => a.t - b.t);  // (stable: a view after the bucket point of its instant)
  return {lines, states};
}

// The state a pointer at x (chart units) names: an OOM or the peak when one is within `snap`
// units (their instants are what a person aims at; an OOM before the peak when both are, as they
// often are: the peak is shown on its own below the chart), else the nearest state. xs: the
// states' x, sorted.
function tensorStateAt(xs, states, x, snap) {
  let best = -1, bestKey = Infinity;
  states.forEach((s, i) => {
    const dist = Math.abs(xs[i] - x);
    if (s.kind === 'bucket' || dist > snap) return;
    const key = (s.kind === 'oom' ? 0 : snap + 1) + dist;
    if (key < bestKey) {
      best = i;
      bestKey = key;
    }
  });
  if (best >= 0) return best;
  let lo = 0, hi = xs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && Math.abs(xs[lo - 1] - x) <= Math.abs(xs[lo] - x) ? lo - 1 : lo;
}

function tensorStateWhat(ctx, s) {
  if (s.kind === 'oom') return 'at OOM #' + oomNumber(ctx, s.oom) + ' (PyTorch\u2019s allocated in its OutOfMemoryError)';
  if (s.kind === 'peak') return 'at the allocated peak (max_memory_allocated)';
  return 'the highest allocated of its time bucket';
}

// "vramtrace peak TRACE --at 1.234567s": every live block at an instant (relative ns).
function atCommand(ctx, ns) {
  const t = Math.max(0, ns);
  return 'vramtrace peak ' + (ctx.r.trace.path || 'TRACE') + ' --at ' + (t >= 1e9 ? (t / 1e9).toFixed(6) + 's' : (t / 1e6).toFixed(3) + 'ms');
}

// Stacked areas (step-wise: each state holds until the next), biggest line at the bottom, with the
// peak and the OOMs marked. Hover: the state the pointer names; click: its lines in a panel
// (first: the device's last OOM, else its peak).
function tensorChart(ctx, d) {
  const {lines, states} = tensorStates(ctx, d);
  const n = states.length;
  if (n < 1) return el('p', {class: 'none'}, 'No tensor was live.');
  const series = lines.map((label, i) => ({label, color: siteColor(i), at: (s) => s.v[i]}));
  if (states.some((s) => s.other > 0)) series.push({label: 'other lines', color: '#c9c9c9', at: (s) => s.other});
  const times = states.map((s) => s.t);
  const W = 1000, H = 240, padL = 70, padB = 24;
  const t0 = times[0], t1 = Math.max(times[n - 1], t0 + 1);
  const ymax = Math.max(1, ...states.map((s) => s.total));
  const x = (t) => padL + (t - t0) / (t1 - t0) * (W - padL - 8);
  const y = (b) => H - padB - b / ymax * (H - padB - 8);
  const xs = times.map(x);
  const svg = svgEl('svg', {class: 'tensor-chart', viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none'});
  const base = new Array(n).fill(0);
  for (const s of series) {
    const top = base.map((b, k) => b + s.at(states[k]));
    let dpath = '';
    for (let k = 0; k < n; k++) {
      const xa = xs[k], xb = k + 1 < n ? xs[k + 1] : x(t1);
      dpath += (k ? 'L' : 'M') + xa.toFixed(1) + ',' + y(top[k]).toFixed(1) + 'L' + xb.toFixed(1) + ',' + y(top[k]).toFixed(1);
    }
    for (let k = n - 1; k >= 0; k--) {
      const xa = xs[k], xb = k + 1 < n ? xs[k + 1] : x(t1);
      dpath += 'L' + xb.toFixed(1) + ',' + y(base[k]).toFixed(1) + 'L' + xa.toFixed(1) + ',' + y(base[k]).toFixed(1);
    }
    svg.appendChild(svgEl('path', {d: dpath + 'Z', fill: s.color, stroke: 'none', opacity: 0.9}));
    top.forEach((v, k) => {
      base[k] = v;
    });
  }
  for (const b of byteTicks(ymax, 4)) {
    svg.appendChild(svgEl('line', {x1: padL, x2: W - 8, y1: y(b), y2: y(b), stroke: '#e3e3e3'}));
    svg.appendChild(svgEl('text', {x: padL - 6, y: y(b) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#777'}, fmtBytes(b)));
  }
  const step = niceStep(t1 - t0, 6);
  for (const tt of ticks(t0, t1, 6))
    svg.appendChild(svgEl('text', {x: x(tt), y: H - 6, 'text-anchor': 'middle', 'font-size': 11, fill: '#777'}, fmtTick(tt, step)));
  // The peak and the OOMs: their states are exact (tensorStates).
  states.forEach((s, k) => {
    if (s.kind === 'bucket') return;
    const oom = s.kind === 'oom';
    svg.appendChild(svgEl('line', {x1: xs[k], x2: xs[k], y1: 8, y2: H - padB, class: oom ? 'tensor-oom' : 'tensor-peak',
      'data-state': k}, svgEl('title', null, tensorStateWhat(ctx, s) + ': ' + fmtBytes(s.total) + ' allocated at ' + fmtSecs(s.t))));
  });
  const cursor = svgEl('line', {y1: 8, y2: H - padB, stroke: '#333', 'stroke-dasharray': '3,3', visibility: 'hidden'});
  svg.appendChild(cursor);
  const pick = (ev) => {
    const r = svg.getBoundingClientRect();
    const px = (ev.clientX - r.left) / Math.max(1, r.width) * W;
    return {k: tensorStateAt(xs, states, px, 8), t: t0 + (px - padL) / (W - padL - 8) * (t1 - t0)};
  };
  const rowsOf = (s) => series.map((se) => [se.label, se.at(s)]).filter((r) => r[1] > 0).sort((a, b) => b[1] - a[1]);
  svg.addEventListener('mousemove', (ev) => {
    const {k} = pick(ev);
    const s = states[k];
    cursor.setAttribute('x1', xs[k]);
    cursor.setAttribute('x2', xs[k]);
    cursor.setAttribute('visibility', 'visible');
    tip.show(ev, fmtSecs(s.t) + ': ' + fmtBytes(s.total) + ' of live tensors, ' + tensorStateWhat(ctx, s),
        rowsOf(s).slice(0, 8).map(([label, b]) => [label, fmtBytes(b)]));
  });
  svg.addEventListener('mouseleave', () => {
    cursor.setAttribute('visibility', 'hidden');
    tip.hide();
  });
  // The panel: a state's lines, exact at its instant; for a click elsewhere, the --at command
  // that lists every block at the clicked instant itself.
  const panel = el('div', {class: 'tensor-state'});
  const show = (k, clicked) => {
    const s = states[k];
    clear(panel);
    panel.append(
        el('h4', null, 'Live tensors at ' + fmtSecs(s.t) + ': ' + fmtBytes(s.total) + ' allocated, ' + tensorStateWhat(ctx, s)),
        el('p', {class: 'sub'}, 'Exact at that instant. ' + (clicked !== undefined && Math.abs(x(clicked) - xs[k]) > 1 ?
          'The clicked moment was ' + fmtSecs(clicked) + '; every block then: ' : 'Every block at any instant: '),
        el('code', null, atCommand(ctx, clicked !== undefined ? clicked : s.t))),
        el('table', {class: 'groups'}, el('thead', null, el('tr', null, ['line', 'bytes', 'share of allocated'].map((h) => el('th', null, h)))),
            el('tbody', null, rowsOf(s).map(([label, b]) => el('tr', null, el('td', null, el('span', {class: 'site'}, label)),
                el('td', {class: 'num'}, fmtBytes(b)), el('td', {class: 'share'}, shareBar(b / Math.max(1, s.total)), ' ', fmtPct(b / Math.max(1, s.total))))))));
  };
  svg.addEventListener('click', (ev) => {
    const {k, t} = pick(ev);
    show(k, t);
  });
  let first = -1;
  states.forEach((s, k) => {
    if (s.kind === 'oom' || (s.kind === 'peak' && (first < 0 || states[first].kind !== 'oom'))) first = k;
  });
  if (first >= 0) show(first);
  const legend = el('div', {class: 'tensor-legend'}, series.map((s) =>
    el('span', null, el('span', {class: 'swatch', style: 'background:' + s.color}), s.label)),
  states.some((s) => s.kind === 'oom') ? el('span', null, el('span', {class: 'swatch swatch-oom'}), 'OOM') : null,
  el('span', null, el('span', {class: 'swatch swatch-peak'}), 'allocated peak'));
  return el('div', null, el('p', {class: 'sub'}, 'Each point is the state at its instant (a time bucket\u2019s highest allocated, ' +
      'the allocated peak, an OOM); hover: the nearest; click: its lines.'), svg, legend, panel);
}

function torchSection(ctx) {
  const P = ctx.r.torch, ti = ctx.index;
  const layer = P.layer === 'on' ? chip('block events: on', 'ok') : chip('block events: ' + P.layer, P.layer === 'not used' ? '' : 'bad');
  const head = [el('div', {class: 'chips'}, chip(P.mode), layer), P.layer_detail ? el('p', {class: 'sub'}, P.layer_detail) : null,
    P.alloc_conf ? el('p', {class: 'sub'}, 'PYTORCH_CUDA_ALLOC_CONF=', el('code', null, P.alloc_conf)) : null];
  const devices = P.devices.map((d, di) => {
    const path = '/torch/devices/' + di;
    const w = d.worst_fragmentation;
    return el('div', {class: 'torch-device'},
        el('h3', null, 'Device ' + d.device + ': peak allocated ' + fmtBytes(d.peak_allocated_bytes) + ' at ' +
            fmtSecs(ctx.rel(d.peak_allocated_t_ns)) + ', peak reserved ' + fmtBytes(d.peak_reserved_bytes)),
        el('h4', null, 'Live tensors by line over time'), tensorChart(ctx, d),
        el('h4', null, 'At the allocated peak'), torchFigures(d.at_peak.figures),
        torchHolders(ctx, d.at_peak.holders, path + '/at_peak/holders', 'share of allocated'),
        segmentsTable(ctx, d.at_peak, path + '/at_peak'),
        w.figures.inactive_split_bytes ? [el('h4', null, 'Fragmentation at its worst (' + fmtSecs(ctx.rel(w.t_ns)) + ': inactive split ' +
            fmtBytes(w.figures.inactive_split_bytes) + ', ' + fmtPct(w.fragmentation) +
            ' of reserved, free space in segments that still hold tensors, which empty_cache() cannot release)'), torchFigures(w.figures)] : null,
        el('p', {class: 'sub'}, 'At the end: allocated ' + fmtBytes(d.end.allocated_bytes) + ', reserved ' + fmtBytes(d.end.reserved_bytes) + '.'));
  });
  const growth = P.growth.map((g) => Object.assign({kind: 'tensor'}, g));
  return section('torch-' + ti, 'PyTorch: tensors, segments and the caching allocator', head, devices,
      growth.length ? [el('h3', null, 'Tensor lines whose live bytes kept rising'), groupsTable(ctx, growth, '/torch/growth', {growth: true})] : null);
}

// An OOM's PyTorch part: its own message's figures, why the request did not fit, the tensors.
function torchOomBlock(ctx, T, path) {
  return [el('h4', null, 'PyTorch\u2019s OutOfMemoryError'), el('div', {class: 'torch-msg'}, T.message),
    el('p', {class: 'sub'}, 'A block of ' + fmtBytes(T.block_bytes) + ' (a new segment of ' + fmtBytes(T.tried_to_allocate_bytes) +
        '); the largest free block was ' + fmtBytes(T.at_oom.figures.largest_free_block_bytes) +
        (T.driver_attempts > 1 ? '; ' + T.driver_attempts + ' failed cudaMalloc calls (the cache was flushed between)' : '') + '.'),
    torchFigures(T.at_oom.figures),
    el('h4', null, 'Live tensors by line at the failure'), torchHolders(ctx, T.at_oom.holders, path + '/at_oom/holders', 'share of allocated'),
    segmentsTable(ctx, T.at_oom, path + '/at_oom'),
    T.outside_bytes ? [el('h4', null, 'Device memory of this process outside PyTorch: ' + fmtBytes(T.outside_bytes)),
      torchHolders(ctx, T.outside, path + '/outside', 'share')] : null];
}
