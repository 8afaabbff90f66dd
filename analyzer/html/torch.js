// PyTorch in its own terms (present only where PyTorch was seen): the allocator's mode and block
// layer, per device the figures of torch.cuda.memory_stats() at the peak and at fragmentation's
// worst, the tensor timeline (live tensors by Python line, stacked, like memory_viz's Active
// Memory Timeline; the analysis keeps each time bucket's high, ~1000 points whatever the number
// of blocks), the tensors and segments at the peak, and an OOM's PyTorch part.
'use strict';

function torchFigures(f) {
  return figures([
    ['allocated', fmtBytes(f.alloc) + ' in ' + plural(f.blocks, 'tensor')],
    ['reserved', fmtBytes(f.res) + ' in ' + plural(f.segs, 'segment')],
    ['reserved but unallocated', fmtBytes(f.unalloc)],
    ['inactive split', fmtBytes(f.split) + ' (free space in segments that still hold live tensors)'],
    ['largest free block', fmtBytes(f.largest)],
  ]);
}

function segmentsTable(v) {
  if (!v.segs.length) return null;
  return [el('h4', null, 'Segments with the most free space'), el('table', {class: 'groups'},
      el('thead', null, el('tr', null, ['segment', 'size', 'allocated', 'free', 'largest free block', 'tensors'].map((h) => el('th', null, h)))),
      el('tbody', null, v.segs.map((g) => el('tr', null,
          el('td', null, el('code', null, '0x' + Number(g.addr).toString(16)), g.exp ? ' (expandable)' : ''),
          el('td', {class: 'num'}, fmtBytes(g.size)), el('td', {class: 'num'}, fmtBytes(g.alloc)),
          el('td', {class: 'num'}, fmtBytes(g.size - g.alloc)), el('td', {class: 'num'}, fmtBytes(g.largest)),
          el('td', {class: 'num'}, fmtCount(g.blocks)))))),
    v.more_segs ? el('p', {class: 'sub'}, plural(v.more_segs, 'more segment') + ' (vramtrace report --format json lists them)') : null];
}

// Stacked areas (step-wise: each value holds until the next time), biggest line at the bottom.
function tensorChart(d) {
  const T = d.tensors, n = T.t.length;
  if (n < 1) return el('p', {class: 'none'}, 'No tensor was live.');
  const series = T.lines.map((l, i) => ({label: l.label, v: l.v, color: siteColor(i)}));
  if (T.other.some((x) => x > 0)) series.push({label: 'other lines', v: T.other, color: '#c9c9c9'});
  const totals = T.t.map((_, k) => series.reduce((a, s) => a + (s.v[k] || 0), 0));
  const W = 1000, H = 240, padL = 70, padB = 24;
  const t0 = T.t[0], t1 = Math.max(T.t[n - 1], t0 + 1);
  const ymax = Math.max(1, ...totals);
  const x = (t) => padL + (t - t0) / (t1 - t0) * (W - padL - 8);
  const y = (b) => H - padB - b / ymax * (H - padB - 8);
  const svg = svgEl('svg', {class: 'tensor-chart', viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none'});
  const base = new Array(n).fill(0);
  for (const s of series) {
    const top = base.map((b, k) => b + (s.v[k] || 0));
    let dpath = '';
    for (let k = 0; k < n; k++) {
      const xa = x(T.t[k]), xb = k + 1 < n ? x(T.t[k + 1]) : x(t1);
      dpath += (k ? 'L' : 'M') + xa.toFixed(1) + ',' + y(top[k]).toFixed(1) + 'L' + xb.toFixed(1) + ',' + y(top[k]).toFixed(1);
    }
    for (let k = n - 1; k >= 0; k--) {
      const xa = x(T.t[k]), xb = k + 1 < n ? x(T.t[k + 1]) : x(t1);
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
  svg.addEventListener('mousemove', (ev) => {
    const r = svg.getBoundingClientRect();
    const tx = t0 + ((ev.clientX - r.left) / r.width * W - padL) / (W - padL - 8) * (t1 - t0);
    const k = Math.max(0, lastAtOrBefore(T.t.map((t) => [t]), tx));
    cursor.setAttribute('x1', x(T.t[k]));
    cursor.setAttribute('x2', x(T.t[k]));
    cursor.setAttribute('visibility', 'visible');
    const rows = series.filter((s) => s.v[k]).sort((a, b) => b.v[k] - a.v[k]).slice(0, 8).map((s) => [s.label, fmtBytes(s.v[k])]);
    tip.show(ev, fmtSecs(T.t[k]) + ': ' + fmtBytes(totals[k]) + ' of live tensors', rows);
  });
  svg.addEventListener('mouseleave', () => {
    cursor.setAttribute('visibility', 'hidden');
    tip.hide();
  });
  const legend = el('div', {class: 'tensor-legend'}, series.map((s) =>
    el('span', null, el('span', {class: 'swatch', style: 'background:' + s.color}), s.label)));
  return el('div', null, svg, legend);
}

function torchSection(t, ti) {
  const P = t.torch;
  const layer = P.layer === 'on' ? chip('block events: on', 'ok') : chip('block events: ' + P.layer, P.layer === 'not used' ? '' : 'bad');
  const head = [el('div', {class: 'chips'}, chip(P.mode), layer), P.detail ? el('p', {class: 'sub'}, P.detail) : null,
    P.conf ? el('p', {class: 'sub'}, 'PYTORCH_CUDA_ALLOC_CONF=', el('code', null, P.conf)) : null];
  const devices = P.devices.map((d) => el('div', {class: 'torch-device'},
      el('h3', null, 'Device ' + d.device + ': peak allocated ' + fmtBytes(d.peak) + ' at ' + fmtSecs(d.peak_t) +
          ', peak reserved ' + fmtBytes(d.peak_res)),
      el('h4', null, 'Live tensors by line over time'), tensorChart(d),
      el('h4', null, 'At the allocated peak'), torchFigures(d.at_peak.fig),
      groupsTable(d.at_peak.holders, {shareLabel: 'share of allocated'}),
      segmentsTable(d.at_peak),
      d.worst.fig.unalloc ? [el('h4', null, 'Fragmentation at its worst (' + fmtSecs(d.worst.t) + ', ' + fmtPct(d.worst.ratio) +
          ' of reserved-but-unallocated outside the largest free block)'), torchFigures(d.worst.fig)] : null,
      el('p', {class: 'sub'}, 'At the end: allocated ' + fmtBytes(d.end_alloc) + ', reserved ' + fmtBytes(d.end_res) + '.')));
  return section('torch-' + ti, 'PyTorch: tensors, segments and the caching allocator', head, devices,
      P.growth.length ? [el('h3', null, 'Tensor lines whose live bytes kept rising'), groupsTable(P.growth, {growth: true})] : null);
}

// An OOM's PyTorch part: its own message's figures, why the request did not fit, the tensors.
function torchOomBlock(T) {
  return [el('h4', null, 'PyTorch\u2019s OutOfMemoryError'), el('div', {class: 'torch-msg'}, T.msg),
    el('p', {class: 'sub'}, 'A block of ' + fmtBytes(T.block) + ' (a new segment of ' + fmtBytes(T.tried) +
        '); the largest free block was ' + fmtBytes(T.at.fig.largest) +
        (T.attempts > 1 ? '; ' + T.attempts + ' failed cudaMalloc calls, the cache flushed between' : '') + '.'),
    torchFigures(T.at.fig),
    el('h4', null, 'Live tensors by line at the failure'), groupsTable(T.at.holders, {shareLabel: 'share of allocated'}),
    segmentsTable(T.at),
    T.outside ? [el('h4', null, 'Device memory of this process outside PyTorch: ' + fmtBytes(T.outside)),
      groupsTable(T.outside_groups, {shareLabel: 'share'})] : null];
}
