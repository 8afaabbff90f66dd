// The timeline of one device: live device memory as an area (the analysis keeps each bucket's
// maximum, so no peak is hidden), host-side buckets (pinned host, managed) as lines, and
// annotations: the peak with a bar of the top sites' contributions at that moment, OOMs,
// growth spans and cache flushes. The per-device totals are all the report holds over time,
// so call sites appear at the peak only (see the report for the per-site series it would need).
// Wheel zooms around the pointer, dragging pans, a double click resets, a click shows what was
// live at that moment (from report.snapshots).
'use strict';

// Charts size themselves to their box: all are redrawn after the window is resized.
const redrawers = [];
let resizeTimer = 0;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => redrawers.forEach((f) => f()), 150);
});

function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
function ticks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const step = niceStep(hi - lo, count), out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
  return out;
}
// Seconds with as many decimals as the tick step needs (ticks are ns).
function fmtTick(ns, stepNs) {
  const digits = Math.max(0, Math.min(9, -Math.floor(Math.log10(stepNs / 1e9) + 1e-9)));
  return (ns / 1e9).toFixed(digits) + ' s';
}
// Byte ticks at round values of one unit (e.g. 0, 512 MiB, 1 GiB, ...).
function byteTicks(max, count) {
  let unit = 1;
  while (max / unit >= 1024 && unit < Math.pow(1024, 5)) unit *= 1024;
  return ticks(0, max / unit, count).map((v) => v * unit);
}
// Index of the last point with t <= x (-1 when none).
function lastAtOrBefore(points, x) {
  let lo = 0, hi = points.length - 1, ans = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid][0] <= x) {
      ans = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return ans;
}

let chartIds = 0;

// What a bucket held when the trace ended, when the report knows it: the leak groups are all
// listed (none beyond --top). Otherwise null, and the last point's value is held to the end.
function finalBytes(ctx, device, kind) {
  const L = ctx.r.leaks, list = L.groups;
  if (ctx.omitted('/leaks/groups') || list.reduce((s, g) => s + g.bytes, 0) !== L.bytes) return null;
  return list.filter((g) => g.device === device && g.kind === kind).reduce((s, g) => s + g.bytes, 0);
}

// Everything below reads times relative to the trace start (ctx.rel), in ns.
function timelineChart(ctx, device) {
  const R = ctx.r, rel = ctx.rel, traceIndex = ctx.index;
  const first = rel(R.trace.first_t_ns), lastT = rel(R.trace.last_t_ns);
  // Each series ends with its value at the end of the trace where known (see finalBytes).
  const series = R.timeline.filter((s) => s.device === device).map((s) => {
    const points = s.points.map((p) => [rel(p[0]), p[1]]);
    const last = points[points.length - 1], end = finalBytes(ctx, device, s.kind);
    if (last && end !== null && lastT > last[0]) points.push([lastT, end]);
    return {device: s.device, kind: s.kind, points};
  });
  const dev = series.find((s) => s.kind === 'device') || {points: []};
  const hosts = series.filter((s) => s.kind !== 'device' && s.points.length);
  const peakReport = R.peak.by_device.find((p) => p.device === device);
  const peak = peakReport ? {bytes: peakReport.bytes, t: rel(peakReport.t_ns), live_set: peakReport.live_set} : null;
  const info = R.trace.devices.find((d) => d.ordinal === device);
  const ooms = R.ooms.map((o, i) => [{t: rel(o.t_ns), op: o.op, req: o.requested_bytes, proc: o.process_device_bytes,
    verdict: o.verdict, device: o.device}, i]).filter(([o]) => o.device === device);
  const growth = R.leaks.growth.filter((g) => g.device === device).slice(0, 6).map((g) =>
    ({t0: rel(g.first_t_ns), t1: rel(g.last_t_ns), bytes: g.bytes, growth_bytes: g.growth_bytes, new_highs: g.new_highs, stack: g.stack}));
  const flushes = R.fragmentation.cache_flushes.map((f) =>
    ({t: rel(f.t_ns), freed: f.freed_bytes, req: f.requested_bytes, ok: f.retry_succeeded}));
  const regions = R.regions.map((g) => ({name: g.name, t0: rel(g.t_begin_ns), t1: rel(g.t_end_ns), closed: g.closed,
    peak: g.peak_bytes, above: g.peak_above_start_bytes}));

  // Full x range: the trace, widened to every point and annotation.
  let xs = [first, lastT];
  for (const s of series) if (s.points.length) xs.push(s.points[0][0], s.points[s.points.length - 1][0]);
  ooms.forEach(([o]) => xs.push(o.t));
  if (peak) xs.push(peak.t);
  let full0 = Math.min(...xs), full1 = Math.max(...xs);
  if (!(full1 > full0)) {
    full0 -= 1e6;
    full1 += 1e6;
  }
  const pad = (full1 - full0) * 0.02;
  full0 -= pad;
  full1 += pad;
  let yMax = peak ? peak.bytes : 0;
  for (const s of series) for (const p of s.points) yMax = Math.max(yMax, p[1]);
  const capacity = info ? info.total_bytes : 0;
  const showCapacity = capacity > 0 && capacity <= yMax * 1.6;
  if (showCapacity) yMax = Math.max(yMax, capacity);
  ooms.forEach(([o]) => {
    if (o.proc + o.req <= yMax * 1.3) yMax = Math.max(yMax, o.proc + o.req);
  });
  yMax = Math.max(yMax * 1.08, 1);

  const view = {x0: full0, x1: full1};
  const clipId = 'vt-clip-' + (++chartIds);
  // Above the plot: a lane of OOM markers, one lane per growing site, one for the regions.
  const regionY = 15 + 7 * growth.length;
  const M = {l: 72, r: 190, t: 24 + 7 * growth.length + (regions.length ? 16 : 0), b: 34}, H = 276 + M.t;
  const holder = el('div', {class: 'chart'});
  const svg = svgEl('svg', {class: 'timeline', height: H, role: 'img', 'aria-label': 'device ' + device + ' memory over time'});
  holder.appendChild(svg);
  let W = 1000, layer = null, cross = null;
  const X = (t) => M.l + (t - view.x0) / (view.x1 - view.x0) * (W - M.l - M.r);
  const Xinv = (px) => view.x0 + (px - M.l) / (W - M.l - M.r) * (view.x1 - view.x0);
  const Y = (b) => M.t + (1 - b / yMax) * (H - M.t - M.b);

  // Top sites at the peak (the bar beside the plot): 8 and "other".
  const segs = [];
  if (peak) {
    let listed = 0;
    const top = peak.live_set.slice(0, 8);
    const labels = siteLabels(top.map((g) => g.stack));
    top.forEach((g, i) => {
      segs.push({label: labels[i], bytes: g.bytes, color: siteColor(i), g});
      listed += g.bytes;
    });
    if (peak.bytes > listed) segs.push({label: 'other sites', bytes: peak.bytes - listed, color: '#bbb'});
  }

  // Steps: memory changes at allocations and frees, and a bucket's maximum is where it was
  // reached, so a value holds until the next point (a straight line would invent a ramp).
  function pathFor(points, area) {
    const i0 = Math.max(0, lastAtOrBefore(points, view.x0));
    const i1 = Math.min(points.length - 1, lastAtOrBefore(points, view.x1) + 1);
    if (i1 < i0 || !points.length) return '';
    const px = (i) => X(points[i][0]).toFixed(1), py = (i) => Y(points[i][1]).toFixed(1);
    let d = area ? 'M' + px(i0) + ',' + Y(0).toFixed(1) + 'L' : 'M';
    d += px(i0) + ',' + py(i0);
    for (let i = i0 + 1; i <= i1; i++) d += 'L' + px(i) + ',' + py(i - 1) + 'L' + px(i) + ',' + py(i);
    // The last value holds to the end of the trace (the last bucket ends there).
    const end = i1 === points.length - 1 && lastT > points[i1][0] ? X(lastT).toFixed(1) : px(i1);
    d += 'L' + end + ',' + py(i1);
    if (area) d += 'L' + end + ',' + Y(0).toFixed(1) + 'Z';
    return d;
  }

  function draw() {
    W = Math.max(640, holder.clientWidth || 1100);
    svg.setAttribute('width', W);
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    clear(svg);
    const plotW = W - M.l - M.r, plotH = H - M.t - M.b;
    svg.appendChild(svgEl('defs', null,
        svgEl('clipPath', {id: clipId}, svgEl('rect', {x: M.l, y: 0, width: plotW, height: H}))));
    const axes = svgEl('g', {class: 'axes'});
    for (const v of byteTicks(yMax, 5)) {
      axes.appendChild(svgEl('line', {x1: M.l, x2: M.l + plotW, y1: Y(v), y2: Y(v), class: 'grid'}));
      axes.appendChild(svgEl('text', {x: M.l - 6, y: Y(v) + 4, 'text-anchor': 'end'}, fmtBytes(v)));
    }
    const xCount = Math.max(2, Math.floor(plotW / 110)), xStep = niceStep(view.x1 - view.x0, xCount);
    for (const v of ticks(view.x0, view.x1, xCount)) {
      axes.appendChild(svgEl('line', {x1: X(v), x2: X(v), y1: M.t + plotH, y2: M.t + plotH + 5, class: 'tick'}));
      axes.appendChild(svgEl('text', {x: X(v), y: M.t + plotH + 18, 'text-anchor': 'middle'}, fmtTick(v, xStep)));
    }
    axes.appendChild(svgEl('line', {x1: M.l, x2: M.l + plotW, y1: M.t + plotH, y2: M.t + plotH, class: 'axis'}));
    svg.appendChild(axes);

    layer = svgEl('g', {'clip-path': 'url(#' + clipId + ')'});
    // Growth spans as thin bands above the plot: a long rise would shade all of it.
    growth.forEach((g, k) => {
      const x0 = X(g.t0), x1 = X(g.t1);
      layer.appendChild(svgEl('rect', {x: x0, y: 15 + k * 7, width: Math.max(2, x1 - x0), height: 5, class: 'growth-span'},
          svgEl('title', null, 'grew by ' + fmtBytes(g.growth_bytes) + ' to ' + fmtBytes(g.bytes) + ' (' + g.new_highs +
              ' new highs at sampling checkpoints): ' + siteLabel(g.stack))));
    });
    for (const g of regions) {
      const x0 = X(g.t0), x1 = X(g.closed ? g.t1 : lastT), w = Math.max(2, x1 - x0);
      const band = svgEl('g', {class: 'region'}, svgEl('rect', {x: x0, y: regionY, width: w, height: 12}),
          svgEl('title', null, g.name + ': peak ' + fmtBytes(g.peak) + ' (+' + fmtBytes(g.above) + ' over its start)'));
      const chars = Math.floor((w - 6) / 5.6);
      if (chars >= 3) band.appendChild(svgEl('text', {x: x0 + 3, y: regionY + 9}, g.name.length > chars ? g.name.slice(0, chars - 1) + '\u2026' : g.name));
      layer.appendChild(band);
    }
    layer.appendChild(svgEl('path', {d: pathFor(dev.points, true), class: 'area-device'}));
    layer.appendChild(svgEl('path', {d: pathFor(dev.points, false), class: 'line-device'}));
    hosts.forEach((s) => layer.appendChild(svgEl('path', {d: pathFor(s.points, false), class: 'line-' + s.kind})));
    if (showCapacity) {
      layer.appendChild(svgEl('line', {x1: M.l, x2: M.l + plotW, y1: Y(capacity), y2: Y(capacity), class: 'capacity'}));
      layer.appendChild(svgEl('text', {x: M.l + 4, y: Y(capacity) - 4, class: 'capacity-label'},
          'device capacity ' + fmtBytes(capacity)));
    }
    for (const f of flushes) {
      const x = X(f.t);
      layer.appendChild(svgEl('path', {d: 'M' + x + ',' + (M.t + plotH - 10) + 'l5,5l-5,5l-5,-5z', class: 'flush'},
          svgEl('title', null, 'cache flush at ' + fmtSecs(f.t) + ': ' + fmtBytes(f.freed) + ' freed for a ' +
              fmtBytes(f.req) + ' request; retry ' + (f.ok ? 'succeeded' : 'failed'))));
    }
    for (const [o, i] of ooms) {
      const x = X(o.t);
      const mark = svgEl('g', {class: 'oom-mark', onclick: () => {
        const card = document.getElementById('oom-' + traceIndex + '-' + i);
        if (card) {
          card.open = true;
          card.scrollIntoView({behavior: 'smooth'});
        }
      }});
      // With few failures, a line and the request drawn on top of what the process held (how
      // far past the device it reached); with many, markers only, or they hide the memory.
      if (ooms.length <= 8) {
        mark.appendChild(svgEl('line', {x1: x, x2: x, y1: M.t, y2: M.t + plotH}));
        mark.appendChild(svgEl('rect', {x: x - 3, width: 6, y: Y(Math.min(yMax, o.proc + o.req)),
          height: Math.max(1, Y(o.proc) - Y(Math.min(yMax, o.proc + o.req))), class: 'oom-request'}));
      }
      mark.appendChild(svgEl('path', {d: 'M' + (x - 6) + ',2h12l-6,9z'}));
      mark.appendChild(svgEl('title', null, 'OOM #' + (i + 1) + ' at ' + fmtSecs(o.t) + ': ' + o.op + ' of ' +
          fmtBytes(o.req) + ' failed with ' + fmtBytes(o.proc) + ' live; verdict: ' + o.verdict));
      layer.appendChild(mark);
    }
    if (peak) {
      const x = X(peak.t), y = Y(peak.bytes);
      layer.appendChild(svgEl('line', {x1: x, x2: x, y1: y, y2: M.t + plotH, class: 'peak-line'}));
      layer.appendChild(svgEl('circle', {cx: x, cy: y, r: 4, class: 'peak-dot'}));
      const right = x > M.l + plotW * 0.75;
      layer.appendChild(svgEl('text', {x: right ? x - 8 : x + 8, y: Math.max(M.t + 10, y - 6), class: 'peak-label',
        'text-anchor': right ? 'end' : 'start'}, 'peak ' + fmtBytes(peak.bytes) + ' at ' + fmtSecs(peak.t)));
    }
    svg.appendChild(layer);

    // The peak's composition, on the same scale, beside the plot.
    if (segs.length) {
      const bx = M.l + plotW + 24;
      svg.appendChild(svgEl('text', {x: bx - 6, y: M.t - 8, class: 'bar-title'}, 'at the peak'));
      let acc = 0;
      segs.forEach((s) => {
        const y1 = Y(acc), y0 = Y(acc + s.bytes);
        const r = svgEl('rect', {x: bx, y: y0, width: 26, height: Math.max(0.5, y1 - y0), fill: s.color, class: 'seg'});
        r.addEventListener('mousemove', (ev) => tip.show(ev, s.label, siteTipLines(s, peak.bytes)));
        r.addEventListener('mouseleave', () => tip.hide());
        svg.appendChild(r);
        if (y1 - y0 >= 12) {
          svg.appendChild(svgEl('text', {x: bx + 32, y: (y0 + y1) / 2 + 4, class: 'seg-label'},
              fmtBytes(s.bytes) + ' ' + fmtPct(s.bytes / peak.bytes)));
        }
        acc += s.bytes;
      });
    }
    cross = svgEl('g', {class: 'cross', visibility: 'hidden'});
    cross.appendChild(svgEl('line', {y1: M.t, y2: M.t + plotH}));
    cross.appendChild(svgEl('circle', {r: 3.5}));
    svg.appendChild(cross);
  }

  function siteTipLines(s, total) {
    const lines = [['bytes', fmtBytes(s.bytes) + ' (' + fmtPct(s.bytes / total) + ' of the peak)']];
    if (s.g) {
      lines.push(['allocations', fmtCount(s.g.count)]);
      (s.g.stack || []).slice(0, 6).forEach((f) => lines.push(frameShort(f)));
    }
    return lines;
  }

  // Zoom and pan.
  function zoom(factor, atPx) {
    const at = Xinv(atPx);
    let span = Math.min(full1 - full0, Math.max(1000, (view.x1 - view.x0) * factor));
    let x0 = at - (at - view.x0) / (view.x1 - view.x0) * span;
    x0 = Math.max(full0, Math.min(full1 - span, x0));
    view.x0 = x0;
    view.x1 = x0 + span;
    draw();
  }
  function localX(ev) {
    const r = svg.getBoundingClientRect();
    return (ev.clientX - r.left) * (W / r.width);
  }
  svg.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    zoom(ev.deltaY > 0 ? 1.25 : 0.8, localX(ev));
  }, {passive: false});
  let drag = null, downPx = null;
  svg.addEventListener('mousedown', (ev) => {
    drag = {px: localX(ev), x0: view.x0, x1: view.x1};
    downPx = drag.px;
    ev.preventDefault();
  });
  // A click (not the end of a drag) on the plot: what was live then, from the nearest snapshot
  // at or before that moment.
  svg.addEventListener('click', (ev) => {
    const px = localX(ev);
    if (downPx !== null && Math.abs(px - downPx) > 3) return;
    if (px < M.l || px > W - M.r) return;
    showSnapshot(Xinv(px));
  });
  window.addEventListener('mouseup', () => {
    drag = null;
  });
  svg.addEventListener('dblclick', () => {
    view.x0 = full0;
    view.x1 = full1;
    draw();
  });
  svg.addEventListener('mousemove', (ev) => {
    const px = localX(ev);
    if (drag) {
      const dt = (px - drag.px) / (W - M.l - M.r) * (drag.x1 - drag.x0);
      const span = drag.x1 - drag.x0;
      view.x0 = Math.max(full0, Math.min(full1 - span, drag.x0 - dt));
      view.x1 = view.x0 + span;
      draw();
      return;
    }
    if (px < M.l || px > W - M.r || !dev.points.length) {
      cross.setAttribute('visibility', 'hidden');
      if (!ev.target.classList || !ev.target.classList.contains('seg')) tip.hide();
      return;
    }
    const t = Xinv(px);
    let i = lastAtOrBefore(dev.points, t);
    if (i < dev.points.length - 1 && (i < 0 || Math.abs(dev.points[i + 1][0] - t) < Math.abs(dev.points[i][0] - t))) i++;
    const p = dev.points[i];
    cross.setAttribute('visibility', 'visible');
    cross.firstChild.setAttribute('x1', X(p[0]));
    cross.firstChild.setAttribute('x2', X(p[0]));
    cross.lastChild.setAttribute('cx', X(p[0]));
    cross.lastChild.setAttribute('cy', Y(p[1]));
    const lines = [['device memory', fmtBytes(p[1])]];
    for (const s of hosts) {
      const j = lastAtOrBefore(s.points, p[0]);
      lines.push([s.kind.replace('_', ' '), fmtBytes(j >= 0 ? s.points[j][1] : 0)]);
    }
    tip.show(ev, 'at ' + fmtSecs(p[0]), lines);
  });
  svg.addEventListener('mouseleave', () => {
    if (cross) cross.setAttribute('visibility', 'hidden');
    tip.hide();
  });

  // The live set at a clicked moment (report.snapshots: the biggest sites at evenly spaced
  // instants; `vramtrace report --at` gives the whole live set at any instant).
  const snapData = R.snapshots || {at: [], stacks: {}};
  const snaps = snapData.at.map((s) => [rel(s.t_ns), s, rel(s.until_ns)]);
  const snapPanel = el('div', {class: 'snapshot', hidden: ''});
  function atArg(ns) {
    return ns >= 1e9 ? (ns / 1e9).toFixed(6) + 's' : (ns / 1e6).toFixed(3) + 'ms';
  }
  function showSnapshot(t) {
    clear(snapPanel);
    snapPanel.hidden = false;
    const i = lastAtOrBefore(snaps, t);
    const cmd = 'vramtrace report ' + (R.trace.path || 'TRACE') + ' --at ' + atArg(Math.max(0, t));
    if (i < 0) {
      snapPanel.append(el('h4', null, 'Nothing was live yet at ' + fmtSecs(t) + ' (before the first allocation)'),
          el('p', {class: 'sub'}, 'The whole live set at that moment: ', el('code', null, cmd)));
      return;
    }
    const [st, s, until] = snaps[i];
    const exact = t <= until;  // nothing changed between the snapshot and the clicked moment
    const here = s.by_device.find((d) => d.device === device);
    const shown = s.sites.reduce((sum, x) => sum + x.bytes, 0);
    const rows = s.sites.map((x) => el('tr', null, el('td', {class: 'num'}, fmtBytes(x.bytes)),
        el('td', {class: 'num'}, fmtCount(x.count)), el('td', null, memoryKind(x.kind) + ', GPU ' + x.device),
        el('td', null, siteCell(snapData.stacks[String(x.stack_id)] || [], null, 0))));
    if (s.total_bytes > shown)
      rows.push(el('tr', null, el('td', {class: 'num'}, fmtBytes(s.total_bytes - shown)), el('td'),
          el('td', null, 'other call sites'), el('td')));
    snapPanel.append(
        el('h4', null, 'Live at ' + fmtSecs(exact ? t : st) + ': ' + fmtBytes(here ? here.bytes : 0) + ' of device memory on GPU ' + device +
            (s.total_bytes ? ' (' + fmtBytes(s.total_bytes) + ' in all)' : '')),
        el('p', {class: 'sub'}, (exact ? 'Unchanged from ' + fmtSecs(st) + ' to ' + fmtSecs(until) + '. ' :
            'The last snapshot before the clicked moment (' + fmtSecs(t) + '; snapshots every ' + fmtSecs(snapData.interval_ns) +
            '). ') + 'The whole live set at the clicked moment: ',
            el('code', null, cmd)),
        s.sites.length ? el('table', {class: 'groups'}, el('thead', null, el('tr', null, el('th', null, 'bytes'),
            el('th', null, 'allocations'), el('th', null, 'memory'), el('th', null, 'allocated at'))), el('tbody', null, rows)) :
          el('p', null, 'No memory was live then.'));
  }

  const tools = el('div', {class: 'chart-tools'},
      el('button', {type: 'button', onclick: () => {
        view.x0 = full0;
        view.x1 = full1;
        draw();
      }}, 'Reset zoom'),
      peak ? el('button', {type: 'button', onclick: () => {
        // Wide enough to show the points around the peak, however close together they are.
        const pts = dev.points, i = Math.max(0, lastAtOrBefore(pts, peak.t));
        const lo = pts.length ? pts[Math.max(0, i - 1)][0] : peak.t, hi = pts.length ? pts[Math.min(pts.length - 1, i + 1)][0] : peak.t;
        const span = Math.min(full1 - full0, Math.max(2000, 3 * (hi - lo), (full1 - full0) / 1000));
        view.x0 = Math.max(full0, Math.min(full1 - span, peak.t - span / 2));
        view.x1 = view.x0 + span;
        draw();
      }}, 'Zoom to peak') : null,
      el('span', {class: 'hint'}, 'click: what was live then · wheel: zoom · drag: pan · double-click: reset'));

  const legend = el('div', {class: 'legend'},
      el('span', {class: 'key key-device'}, 'device memory (live, this process)'),
      hosts.map((s) => el('span', {class: 'key key-' + s.kind}, s.kind.replace('_', ' ') + ' (host memory, not stacked)')),
      ooms.length ? el('span', {class: 'key key-oom'}, ooms.length <= 8 ? 'failed allocation (bar: the request on top of the live set)' :
        'failed allocations (\u25bc, click for the verdict)') : null,
      growth.length ? el('span', {class: 'key key-growth'}, 'a call site kept growing (band at the top)') : null,
      regions.length ? el('span', {class: 'key key-region'}, 'named regions') : null,
      flushes.length ? el('span', {class: 'key key-flush'}, 'cache flush') : null,
      capacity && !showCapacity ? el('span', {class: 'key'}, 'device capacity ' + fmtBytes(capacity) + ' (off scale)') : null);
  const sites = el('ol', {class: 'site-legend'},
      segs.map((s) => el('li', null, el('span', {class: 'swatch', style: 'background:' + s.color}),
          el('span', {class: 'num'}, fmtBytes(s.bytes)), ' ', el('span', {class: 'site'}, s.label))));

  const box = el('div', {class: 'timeline-box'},
      el('h3', null, 'Device ' + device + (info ? ': ' + info.name : '')), tools, holder, legend,
      segs.length ? el('div', {class: 'sites-at-peak'}, el('div', {class: 'sub'}, 'Call sites at the peak (the bar on the right):'), sites) : null,
      snapPanel);
  // Drawn once the box is in the document, so that its width is known.
  box.vtDraw = draw;
  redrawers.push(draw);
  return box;
}
