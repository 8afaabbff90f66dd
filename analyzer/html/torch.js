// PyTorch in its own terms (present only where PyTorch was seen): the allocator's mode and block
// layer, per device the figures of torch.cuda.memory_stats() at the peak and at fragmentation's
// worst, the tensor timeline (live tensors by Python line, stacked, like memory_viz's Active
// Memory Timeline; the analysis keeps each time bucket's high, ~1000 points whatever the number
// of blocks), the tensors and segments at the peak, and an OOM's PyTorch part.
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

// Stacked areas (step-wise: each value holds until the next time), biggest line at the bottom.
function tensorChart(ctx, d) {
  const TL = d.tensor_timeline, n = TL.t_ns.length;
  if (n < 1) return el('p', {class: 'none'}, 'No tensor was live.');
  const times = TL.t_ns.map((t) => ctx.rel(t));
  const series = TL.lines.map((l, i) => ({label: l.line, v: l.values, color: siteColor(i)}));
  if (TL.other.some((x) => x > 0)) series.push({label: 'other lines', v: TL.other, color: '#c9c9c9'});
  const totals = times.map((_, k) => series.reduce((a, s) => a + (s.v[k] || 0), 0));
  const W = 1000, H = 240, padL = 70, padB = 24;
  const t0 = times[0], t1 = Math.max(times[n - 1], t0 + 1);
  const ymax = Math.max(1, ...totals);
  const x = (t) => padL + (t - t0) / (t1 - t0) * (W - padL - 8);
  const y = (b) => H - padB - b / ymax * (H - padB - 8);
  const svg = svgEl('svg', {class: 'tensor-chart', viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none'});
  const base = new Array(n).fill(0);
  for (const s of series) {
    const top = base.map((b, k) => b + (s.v[k] || 0));
    let dpath = '';
    for (let k = 0; k < n; k++) {
      const xa = x(times[k]), xb = k + 1 < n ? x(times[k + 1]) : x(t1);
      dpath += (k ? 'L' : 'M') + xa.toFixed(1) + ',' + y(top[k]).toFixed(1) + 'L' + xb.toFixed(1) + ',' + y(top[k]).toFixed(1);
    }
    for (let k = n - 1; k >= 0; k--) {
      const xa = x(times[k]), xb = k + 1 < n ? x(times[k + 1]) : x(t1);
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
  const cursor = svgEl('line', {y1: 8, y2: H - padB, stroke: '#333', 'stroke-dasharray': '3,3', visibility: 'hidden'});
  svg.appendChild(cursor);
  const keyed = times.map((t) => [t]);
  svg.addEventListener('mousemove', (ev) => {
    const r = svg.getBoundingClientRect();
    const tx = t0 + ((ev.clientX - r.left) / r.width * W - padL) / (W - padL - 8) * (t1 - t0);
    const k = Math.max(0, lastAtOrBefore(keyed, tx));
    cursor.setAttribute('x1', x(times[k]));
    cursor.setAttribute('x2', x(times[k]));
    cursor.setAttribute('visibility', 'visible');
    const rows = series.filter((s) => s.v[k]).sort((a, b) => b.v[k] - a.v[k]).slice(0, 8).map((s) => [s.label, fmtBytes(s.v[k])]);
    tip.show(ev, fmtSecs(times[k]) + ': ' + fmtBytes(totals[k]) + ' of live tensors', rows);
  });
  svg.addEventListener('mouseleave', () => {
    cursor.setAttribute('visibility', 'hidden');
    tip.hide();
  });
  const legend = el('div', {class: 'tensor-legend'}, series.map((s) =>
    el('span', null, el('span', {class: 'swatch', style: 'background:' + s.color}), s.label)));
  return el('div', null, svg, legend);
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
        (T.driver_attempts > 1 ? '; ' + T.driver_attempts + ' failed cudaMalloc calls, the cache flushed between' : '') + '.'),
    torchFigures(T.at_oom.figures),
    el('h4', null, 'Live tensors by line at the failure'), torchHolders(ctx, T.at_oom.holders, path + '/at_oom/holders', 'share of allocated'),
    segmentsTable(ctx, T.at_oom, path + '/at_oom'),
    T.outside_bytes ? [el('h4', null, 'Device memory of this process outside PyTorch: ' + fmtBytes(T.outside_bytes)),
      torchHolders(ctx, T.outside, path + '/outside', 'share')] : null];
}
